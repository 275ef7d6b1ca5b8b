#include "server/compat/artifact_manifest.h"

#include <charconv>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/md5.h"
#include "core/text_encoding.h"
#include "server/compat/compat_context.h"
#include "server/compat/signed_url.h"

namespace cohort::compat {
namespace {

constexpr int64_t kUrlTtlSeconds = 24 * 3600;

std::string ManifestText(int64_t key_id, const std::string& entity, int64_t version_pk,
                         int64_t expires) {
  return "ARTIFACT-MANIFEST\n" + std::to_string(key_id) + "\n" + entity + "\n" +
         std::to_string(version_pk) + "\n" + std::to_string(expires);
}

// The MD5 (base64) of a stored blob, read once through MD5.
Result<std::string> ComputeMd5(blob::BlobStore* blobs, const std::string& sha256, uint64_t size) {
  Md5 md5;
  for (uint64_t offset = 0; offset < size;) {
    COHORT_ASSIGN_OR_RETURN(std::string bytes,
                            blobs->Read(sha256, offset, limits::kBlobPartBytes));
    if (bytes.empty()) {
      return Status::Corruption("blob " + sha256 + " ends at " + std::to_string(offset) +
                              " bytes, not " + std::to_string(size));
    }
    md5.Update(bytes);
    offset += bytes.size();
  }
  return Base64Encode(md5.FinishRaw());
}

// The manifest JSON of `v`, in the layout the vendor's SDK writes (storage layout V2).
Result<std::string> MadeManifest(api::ApiContext* ctx, const store::ArtifactVersion& v) {
  COHORT_ASSIGN_OR_RETURN(auto files, ctx->store->ListArtifactFiles(v));
  std::vector<std::string> shas;
  for (const store::ArtifactFile& f : files) {
    if (f.ref.empty()) shas.push_back(f.sha256);
  }
  COHORT_ASSIGN_OR_RETURN(auto md5s, ctx->store->Md5sOfBlobs(v.entity, shas));
  bj::object contents;
  for (const store::ArtifactFile& f : files) {
    bj::object entry;
    if (!f.ref.empty()) {
      // A reference: the vendor's SDK takes the digest as it is and fetches the URI itself.
      entry["digest"] = f.ref_digest.empty() ? f.ref : f.ref_digest;
      entry["ref"] = f.ref;
      if (f.size >= 0) entry["size"] = f.size;
      contents[f.path] = std::move(entry);
      continue;
    }
    auto known = md5s.find(f.sha256);
    if (known == md5s.end()) {
      if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
      COHORT_ASSIGN_OR_RETURN(std::string md5, ComputeMd5(ctx->blobs, f.sha256, uint64_t(f.size)));
      COHORT_RETURN_IF_ERROR(ctx->store->RecordBlob(v.entity, f.sha256, f.size, NowMillis(), md5));
      known = md5s.emplace(f.sha256, std::move(md5)).first;
    }
    entry["digest"] = known->second;
    entry["size"] = f.size;
    contents[f.path] = std::move(entry);
  }
  return bj::serialize(bj::object{{"version", 1},
                                  {"storagePolicy", "wandb-storage-policy-v1"},
                                  {"storagePolicyConfig", bj::object{{"storageLayout", "V2"}}},
                                  {"contents", std::move(contents)}});
}

}  // namespace

std::string MadeManifestUrl(GqlContext* c, int64_t version_pk) {
  if (c->api->signing_keys == nullptr || c->who.key_id <= 0) return "";
  const int64_t expires = c->now_ms / 1000 + kUrlTtlSeconds;
  return c->base_url + "/artifacts-manifest/" + PercentEncode(c->who.entity, false) + "/" +
         std::to_string(version_pk) +
         SignedQuery(c->api, c->who.key_id, expires, [&](int64_t key, int64_t x) {
           return ManifestText(key, c->who.entity, version_pk, x);
         });
}

void RegisterArtifactManifestRoute(http::Router& r, api::ApiContext* ctx) {
  r.Add("GET", "/artifacts-manifest/{entity}/{version}",
        Guarded("artifact manifest", [ctx](http::HttpRequest& req) {
          const std::string entity = req.PathParam("entity");
          const std::string version = req.PathParam("version");
          int64_t pk = 0;
          auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), pk);
          if (ec != std::errc() || end != version.data() + version.size() || pk <= 0) {
            return api::ErrorResponse(Status::NotFound("no such artifact manifest"));
          }
          Status signed_ok = CheckSignedUrl(
              ctx, req, "artifact manifest", entity,
              [&](int64_t key, int64_t expires) { return ManifestText(key, entity, pk, expires); });
          if (!signed_ok.ok()) return api::ErrorResponse(signed_ok);
          auto v = ctx->store->GetArtifactVersionByPk(entity, pk);
          if (!v.ok()) return api::ErrorResponse(v.status());
          auto manifest = MadeManifest(ctx, *v);
          if (!manifest.ok()) return api::ErrorResponse(manifest.status());
          return http::HttpResponse::Json(200, std::move(*manifest));
        }));
}

}  // namespace cohort::compat
