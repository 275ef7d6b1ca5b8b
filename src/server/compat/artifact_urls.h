// Signed URLs of the vendor's artifact uploads and downloads (docs/compat.md, "Artifacts"):
// made by the GraphQL resolvers, checked by the /artifacts-upload and /artifacts-download routes
// (the clients send no credentials with them). An upload URL names the entity, the draft, the
// kind ("file", "manifest", or "part-N" of a multipart upload) and the MD5 of the bytes; a
// download URL names the entity and the blob; both expire after 24 h.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/compat/resolvers.h"
#include "server/http/message.h"

namespace cohort::compat::artifact_urls {

// The vendor's multipart uploads (files of 2 GiB or more) have fewer parts than this.
inline constexpr int64_t kMaxMultipartParts = 10000;
// The size of their parts but the last (the vendor's core, multipart.go), for files of fewer
// than kMaxMultipartParts parts.
inline constexpr uint64_t kVendorPartBytes = uint64_t{100} << 20;

// The texts signed for an upload and a download URL.
std::string UploadText(int64_t key_id, const std::string& entity, int64_t draft,
                       const std::string& kind, const std::string& md5_hex, int64_t expires);
std::string DownloadText(int64_t key_id, const std::string& entity, const std::string& sha256,
                         int64_t expires);
// The URL for uploading bytes of MD5 `md5_b64` (base64) as `kind` of the draft; `file`: the
// file's name in the artifact, only to name it in errors (not signed). Needs an API key.
Result<std::string> UploadUrl(GqlContext* c, int64_t draft, const std::string& kind,
                              const std::string& md5_b64, const std::string& file = "");
// The URL for downloading a blob; empty without a signing key or an API key.
std::string DownloadUrl(GqlContext* c, const std::string& sha256);

// The routes check these URLs with CheckSignedUrl (signed_url.h) over UploadText/DownloadText.

// N of an upload kind "part-N" (a part of a multipart upload, 1-based); 0 for another kind.
int64_t MultipartPartNumber(std::string_view kind);

struct UploadPath {
  std::string entity;
  int64_t draft = 0;
  std::string kind, md5_hex;
};
// The parts of an upload path; kNotFound when they are not one.
Result<UploadPath> ParseUploadPath(const std::string& entity, const std::string& draft,
                                   const std::string& kind, const std::string& md5_hex);

}  // namespace cohort::compat::artifact_urls
