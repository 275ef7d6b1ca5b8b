// Signed URLs of the compatibility routes: the vendor's clients upload and download through URLs
// that carry no credentials, so each URL carries a grant instead: `?k=<key id>&x=<expiry, unix
// seconds>&s=<hex HMAC-SHA256 by the server's signing key>` over a text naming exactly what it
// grants (the route's own, e.g. "ARTIFACT-GET\n<key>\n<entity>\n<sha256>\n<expiry>"), made for
// the API key that asked for it and dead once that key is revoked.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/message.h"

namespace cohort::compat {

// What a grant's text is made of: (key id, expiry in unix seconds) -> the signed text.
using GrantText = std::function<std::string(int64_t key_id, int64_t expires_s)>;

// The query string "?k=..&x=..&s=.." of a URL granting `text(key_id, expires_s)`; empty when
// the server has no signing key.
std::string SignedQuery(const api::ApiContext* ctx, int64_t key_id, int64_t expires_s,
                        const GrantText& text);

// Checks the grant of `req`'s query: signature, expiry, and that the key it was made for is one
// of `entity`'s and not revoked. kUnauthenticated naming the problem ("<what>: the URL expired").
Status CheckSignedUrl(api::ApiContext* ctx, const http::HttpRequest& req, std::string_view what,
                      const std::string& entity, const GrantText& text);

}  // namespace cohort::compat
