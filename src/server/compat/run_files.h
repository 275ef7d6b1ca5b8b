// Files of runs: the signed upload URLs that CreateRunFiles hands out, the PUT route they
// point at, and Cohort's API to list and download a run's files.
//
// The vendor's clients PUT to the returned URL without credentials, so the URL carries them:
// the id of the key that asked for it, an expiry, and an HMAC-SHA256 over the method, run, file
// name and expiry keyed with that key's stored hash. Any server sharing the store can check it;
// revoking the key revokes its URLs.
//
// Thread-safe.
#pragma once

#include <string>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/router.h"
#include "store/meta_types.h"
#include "store/run_types.h"

namespace cohort::compat {

// The upload URL of `name` for the caller (`who`, whose secret hashes to `key_hash`), valid for
// `ttl_s` seconds. kFailedPrecondition for browser sessions, which have no stored key.
Result<std::string> UploadUrl(const std::string& base_url, const api::AuthContext& who,
                              const std::string& key_hash, const store::RunRef& ref,
                              const std::string& name, int64_t now_ms, int64_t ttl_s = 86400);

// Where Cohort's API serves the file.
std::string DownloadUrl(const std::string& base_url, const store::RunRef& ref,
                        const std::string& name);

// Checks the name of an uploaded file: 1-1024 bytes of UTF-8, '/'-separated segments none of
// which is empty, "." or ".."; no leading or trailing '/', no backslash, no control characters.
// kInvalidArgument naming the problem otherwise.
Status ValidateUploadName(std::string_view name);

// "a b/c.txt" -> "a%20b/c.txt": each path segment percent-encoded, '/' kept.
std::string EscapePath(std::string_view name);

void RegisterRunFileRoutes(http::Router& r, api::ApiContext* ctx);

}  // namespace cohort::compat
