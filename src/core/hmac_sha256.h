// HMAC-SHA256 (RFC 2104 with SHA-256): the one implementation of upload URL signatures
// (server/api/signing_keys.h), S3 request signing (blob/s3_client.h) and alert webhook
// signatures (server/webhooks/webhook_payload.h). OpenSSL underneath, in cohort_digest.
//
// Threading: pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace cohort {

// The 32-byte MAC of `message` under `key` (any length; a key longer than 64 bytes is hashed
// first, as RFC 2104 says).
std::string HmacSha256(std::string_view key, std::string_view message);
// The same as 64 lowercase hex digits.
std::string HmacSha256Hex(std::string_view key, std::string_view message);

}  // namespace cohort
