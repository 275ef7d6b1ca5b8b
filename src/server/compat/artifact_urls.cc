// Signed URLs of artifact uploads and downloads (artifact_urls.h).
#include "server/compat/artifact_urls.h"

#include <charconv>

#include "core/clock.h"
#include "core/text_encoding.h"

namespace cohort::compat::artifact_urls {
namespace {
constexpr int64_t kUrlTtlSeconds = 24 * 3600;
}  // namespace

std::string UploadText(int64_t key_id, const std::string& entity, int64_t draft,
                       const std::string& kind, const std::string& md5_hex, int64_t expires) {
  return "ARTIFACT-PUT\n" + std::to_string(key_id) + "\n" + entity + "\n" + std::to_string(draft) +
         "\n" + kind + "\n" + md5_hex + "\n" + std::to_string(expires);
}
std::string DownloadText(int64_t key_id, const std::string& entity, const std::string& sha256,
                         int64_t expires) {
  return "ARTIFACT-GET\n" + std::to_string(key_id) + "\n" + entity + "\n" + sha256 + "\n" +
         std::to_string(expires);
}
std::string Query(int64_t key_id, int64_t expires, const std::string& sig) {
  return "?k=" + std::to_string(key_id) + "&x=" + std::to_string(expires) + "&s=" + sig;
}

Result<std::string> UploadUrl(GqlContext* c, int64_t draft, const std::string& kind,
                              const std::string& md5_b64, const std::string& file) {
  if (c->who.key_id <= 0 || c->who.session) {
    return Status::FailedPrecondition("uploads need an API key, not a browser session");
  }
  if (c->api->signing_keys == nullptr) {
    return Status::FailedPrecondition("uploads: the server has no signing key");
  }
  std::string md5 = Base64Decode(md5_b64);
  if (md5.size() != 16) return Status::InvalidArgument("md5: expected the base64 of 16 bytes");
  const std::string hex = HexLower(md5);
  const int64_t expires = c->now_ms / 1000 + kUrlTtlSeconds;
  const std::string sig = c->api->signing_keys->Sign(
      UploadText(c->who.key_id, c->who.entity, draft, kind, hex, expires));
  return c->base_url + "/artifacts-upload/" + PercentEncode(c->who.entity, false) + "/" +
         std::to_string(draft) + "/" + kind + "/" + hex + Query(c->who.key_id, expires, sig) +
         (file.empty() ? "" : "&f=" + PercentEncode(file, false));
}

std::string DownloadUrl(GqlContext* c, const std::string& sha256) {
  if (c->api->signing_keys == nullptr || c->who.key_id <= 0) return "";
  const int64_t expires = c->now_ms / 1000 + kUrlTtlSeconds;
  const std::string sig =
      c->api->signing_keys->Sign(DownloadText(c->who.key_id, c->who.entity, sha256, expires));
  return c->base_url + "/artifacts-download/" + PercentEncode(c->who.entity, false) + "/" + sha256 +
         Query(c->who.key_id, expires, sig);
}

Status CheckSignedText(api::ApiContext* ctx, const http::HttpRequest& req,
                       const std::function<std::string(int64_t, int64_t)>& text) {
  int64_t key_id = 0, expires = 0;
  std::string k = req.QueryParam("k"), x = req.QueryParam("x"), sig = req.QueryParam("s");
  auto num = [](const std::string& s, int64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  if (!num(k, &key_id) || !num(x, &expires) || sig.empty()) {
    return Status::Unauthenticated("artifact file: the URL is not signed; ask the API for one");
  }
  if (ctx->signing_keys == nullptr || !ctx->signing_keys->Verify(text(key_id, expires), sig)) {
    return Status::Unauthenticated("artifact file: invalid signature");
  }
  if (expires * 1000 < NowMillis()) return Status::Unauthenticated("artifact file: URL expired");
  return Status::Ok();
}

Status CheckKeyLive(api::ApiContext* ctx, const std::string& entity, int64_t key_id) {
  COHORT_ASSIGN_OR_RETURN(auto keys, ctx->store->ListApiKeys(entity));
  for (const store::ApiKeyRecord& key : keys) {
    if (key.id == key_id && !key.revoked) return Status::Ok();
  }
  return Status::Unauthenticated("artifact file: the key that asked for this URL is revoked");
}

int64_t MultipartPartNumber(std::string_view kind) {
  if (!kind.starts_with("part-")) return 0;
  int64_t n = 0;
  auto [e, ec] = std::from_chars(kind.data() + 5, kind.data() + kind.size(), n);
  if (ec != std::errc() || e != kind.data() + kind.size()) return 0;
  return n >= 1 && n <= kMaxMultipartParts ? n : 0;
}

Result<UploadPath> ParseUploadPath(const std::string& entity, const std::string& draft,
                                   const std::string& kind, const std::string& md5_hex) {
  UploadPath p{entity, 0, kind, md5_hex};
  auto [e, ec] = std::from_chars(draft.data(), draft.data() + draft.size(), p.draft);
  if (ec != std::errc() || e != draft.data() + draft.size() || p.draft <= 0) {
    return Status::NotFound("no such artifact upload");
  }
  if ((kind != "file" && kind != "manifest" && MultipartPartNumber(kind) == 0) ||
      md5_hex.size() != 32) {
    return Status::NotFound("no such artifact upload");
  }
  return p;
}

}  // namespace cohort::compat::artifact_urls
