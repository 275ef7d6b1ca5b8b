#include "server/compat/signed_url.h"

#include <charconv>

#include "core/clock.h"
#include "server/api/signing_keys.h"

namespace cohort::compat {
namespace {

bool ParseInt(const std::string& s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string SignedQuery(const api::ApiContext* ctx, int64_t key_id, int64_t expires_s,
                        const GrantText& text) {
  if (ctx->signing_keys == nullptr) return "";
  return "?k=" + std::to_string(key_id) + "&x=" + std::to_string(expires_s) +
         "&s=" + ctx->signing_keys->Sign(text(key_id, expires_s));
}

Status CheckSignedUrl(api::ApiContext* ctx, const http::HttpRequest& req, std::string_view what,
                      const std::string& entity, const GrantText& text) {
  const std::string w(what);
  int64_t key_id = 0, expires = 0;
  const std::string sig = req.QueryParam("s");
  if (!ParseInt(req.QueryParam("k"), &key_id) || !ParseInt(req.QueryParam("x"), &expires) ||
      sig.empty()) {
    return Status::Unauthenticated(w + ": the URL is not signed; ask the API for one");
  }
  if (ctx->signing_keys == nullptr || !ctx->signing_keys->Verify(text(key_id, expires), sig)) {
    return Status::Unauthenticated(w + ": invalid signature");
  }
  if (expires * 1000 < NowMillis()) return Status::Unauthenticated(w + ": the URL expired");
  COHORT_ASSIGN_OR_RETURN(auto keys, ctx->store->ListApiKeys(entity));
  for (const store::ApiKeyRecord& key : keys) {
    if (key.id == key_id && !key.revoked) return Status::Ok();
  }
  return Status::Unauthenticated(w + ": the key that asked for this URL is revoked");
}

}  // namespace cohort::compat
