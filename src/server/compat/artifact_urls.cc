// Signed URLs of artifact uploads and downloads (artifact_urls.h).
#include "server/compat/artifact_urls.h"

#include <charconv>

#include "core/text_encoding.h"
#include "server/compat/signed_url.h"

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
  const std::string query =
      SignedQuery(c->api, c->who.key_id, expires, [&](int64_t key, int64_t x) {
        return UploadText(key, c->who.entity, draft, kind, hex, x);
      });
  return c->base_url + "/artifacts-upload/" + PercentEncode(c->who.entity, false) + "/" +
         std::to_string(draft) + "/" + kind + "/" + hex + query +
         (file.empty() ? "" : "&f=" + PercentEncode(file, false));
}

std::string DownloadUrl(GqlContext* c, const std::string& sha256) {
  if (c->api->signing_keys == nullptr || c->who.key_id <= 0) return "";
  const int64_t expires = c->now_ms / 1000 + kUrlTtlSeconds;
  return c->base_url + "/artifacts-download/" + PercentEncode(c->who.entity, false) + "/" + sha256 +
         SignedQuery(c->api, c->who.key_id, expires, [&](int64_t key, int64_t x) {
           return DownloadText(key, c->who.entity, sha256, x);
         });
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
