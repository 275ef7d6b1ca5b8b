#include "server/compat/run_files.h"

#include <charconv>
#include <chrono>
#include <thread>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "core/text_encoding.h"
#include "server/api/throttle.h"
#include "server/compat/compat_context.h"
#include "server/compat/signed_url.h"
#include "server/compat/wandb_lines.h"
#include "store/artifact_types.h"

namespace cohort::compat {
namespace {

// What an upload URL's signature covers.
std::string SignedText(int64_t key_id, const store::RunRef& ref, const std::string& name,
                       int64_t expires_s) {
  return "PUT\n" + std::to_string(key_id) + "\n" + ref.entity + "\n" + ref.project + "\n" +
         ref.run_id + "\n" + name + "\n" + std::to_string(expires_s);
}

// Checks the signature of an upload URL, and that the key it was made for is not revoked.
Status CheckSignature(api::ApiContext* ctx, const http::HttpRequest& req,
                      const store::RunRef& ref, const std::string& name) {
  return CheckSignedUrl(ctx, req, "upload", ref.entity, [&](int64_t key_id, int64_t expires) {
    return SignedText(key_id, ref, name, expires);
  });
}

// A content type that is safe to serve from the UI's origin: text as plain text, everything
// else as a download.
std::string ServedType(const std::string& name, bool* attachment) {
  auto ends = [&](std::string_view ext) { return name.ends_with(ext); };
  *attachment = false;
  if (ends(".json") || ends(".jsonl")) return "application/json";
  if (ends(".txt") || ends(".log") || ends(".yaml") || ends(".yml") || ends(".patch") ||
      ends(".py") || ends(".md") || ends(".csv")) {
    return "text/plain; charset=utf-8";
  }
  *attachment = true;
  return "application/octet-stream";
}

}  // namespace

Status ValidateUploadName(std::string_view name) {
  return ValidateRelativePath("file name", name);
}

Result<std::string> UploadUrl(const api::SigningKeys* keys, const std::string& base_url,
                              const api::AuthContext& who, const store::RunRef& ref,
                              const std::string& name, int64_t now_ms, int64_t ttl_s) {
  COHORT_RETURN_IF_ERROR(ValidateUploadName(name));
  if (who.key_id <= 0 || who.session) {
    return Status::FailedPrecondition("uploads need an API key, not a browser session");
  }
  if (keys == nullptr) return Status::FailedPrecondition("uploads: the server has no signing key");
  int64_t expires = now_ms / 1000 + ttl_s;
  return base_url + "/files/" + PercentEncode(ref.entity, true) + "/" +
         PercentEncode(ref.project, true) + "/" + PercentEncode(ref.run_id, true) + "/upload/" +
         PercentEncode(name, true) + "?k=" + std::to_string(who.key_id) +
         "&x=" + std::to_string(expires) +
         "&s=" + keys->Sign(SignedText(who.key_id, ref, name, expires));
}

Status CheckSignedUpload(api::ApiContext* ctx, const http::HttpRequest& head) {
  // /files/{entity}/{project}/{run}/upload/{name...}, each segment percent-decoded as the router
  // does.
  std::string_view path = head.target;
  path = path.substr(0, path.find('?'));
  constexpr std::string_view kPrefix = "/files/";
  if (head.method != "PUT" || !path.starts_with(kPrefix)) {
    return Status::Unauthenticated("this request needs an API key");
  }
  path.remove_prefix(kPrefix.size());
  std::vector<std::string> segments;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    segments.push_back(http::PercentDecode(path.substr(start, end - start)));
    start = end + 1;
  }
  if (segments.size() < 5 || segments[3] != "upload") {
    return Status::Unauthenticated("this request needs an API key");
  }
  store::RunRef ref{segments[0], segments[1], segments[2]};
  std::string name = segments[4];
  for (size_t i = 5; i < segments.size(); ++i) name += "/" + segments[i];
  COHORT_RETURN_IF_ERROR(ValidateUploadName(name));
  return CheckSignature(ctx, head, ref, name);
}

std::string DownloadUrl(const std::string& base_url, const store::RunRef& ref,
                        const std::string& name) {
  return base_url + "/api/v1/runs/" + PercentEncode(ref.entity, true) + "/" +
         PercentEncode(ref.project, true) + "/" + PercentEncode(ref.run_id, true) + "/files/" +
         PercentEncode(name, true);
}

namespace {

// Whether an upload is a media file of the vendor's clients that a history line's media value
// names (media/images/x.png, media/audio/, media/videos/, media/html/, media/table/x.table.json,
// in subfolders when the key has '/': media/images/val/x.png); not an image's masks
// (media/images/mask/<key>_<step>_<id>.mask.png, which no media row names).
bool IsVendorMediaFile(std::string_view name) {
  if (name.starts_with("media/images/mask/") && name.ends_with(".mask.png")) return false;
  for (std::string_view dir : {"media/images/", "media/audio/", "media/videos/", "media/html/",
                               "media/table/"}) {
    if (IsMediaPathBelow(name, dir)) return true;
  }
  return false;
}

constexpr int kSharedUploadTries = 10;  // about 0.9 s of waiting in all

// PutMediaBlob's one try: held already, or uploaded, checked, recorded and published.
Status StoreMediaBlob(api::ApiContext* ctx, const std::string& entity, const std::string& sha,
                      std::string_view body) {
  const uint64_t size = body.size();
  // The run file naming it comes next, which gc must not race (HoldsBlob touches its record).
  COHORT_ASSIGN_OR_RETURN(const bool held, api::HoldsBlob(ctx, entity, sha, int64_t(size)));
  if (held) return Status::Ok();
  // The entity's own upload (blob::OwnedUploadName); an empty file has no part.
  const std::string upload = blob::OwnedUploadName(entity, sha);
  int64_t part = 0;
  for (uint64_t off = 0; off < size; off += limits::kBlobPartBytes, ++part) {
    const std::string_view bytes = body.substr(off, limits::kBlobPartBytes);
    COHORT_RETURN_IF_ERROR(ctx->blobs->PutPart(upload, size, part, bytes));
  }
  COHORT_ASSIGN_OR_RETURN(auto verified, ctx->blobs->VerifyAs(upload, size, sha));
  // Recorded before it is published (docs/artifacts.md, "Garbage collection").
  COHORT_RETURN_IF_ERROR(
      ctx->store->RecordBlob(entity, sha, int64_t(size), NowMillis(), /*md5=*/""));
  return verified->Publish();
}

// A media file of the vendor's clients: kept as a blob the entity holds, which the media rows of
// the history lines name by SHA-256 (wandb_lines.h), so that it is served like every media file
// (docs/formats.md "Media"); its SHA-256. The run file of its name (other files of the run may
// refer to it by path, e.g. a table's image cells) keeps no copy: it names the blob.
Result<std::string> PutMediaBlob(api::ApiContext* ctx, const std::string& entity,
                                 std::string_view body) {
  if (uint64_t(body.size()) > ctx->limits.max_media_file_bytes) {
    return Status::PayloadTooLarge(
        "media file of " + std::to_string(body.size()) + " bytes, more than the limit of " +
        std::to_string(ctx->limits.max_media_file_bytes) + " (--max-media-file-bytes)");
  }
  const std::string sha = Sha256::Hex(body);
  // The same file sent twice at once by the entity shares one upload: the blob store refuses
  // one request while the other writes or completes it (kUnavailable, kFailedPrecondition), and
  // that one asks again, finding the blob held once the other is done.
  Status busy;
  for (int attempt = 0; attempt < kSharedUploadTries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    busy = StoreMediaBlob(ctx, entity, sha, body);
    if (busy.code() != StatusCode::kUnavailable && busy.code() != StatusCode::kFailedPrecondition) {
      break;
    }
  }
  COHORT_RETURN_IF_ERROR(busy);
  return sha;
}

}  // namespace

void RegisterRunFileRoutes(http::Router& r, api::ApiContext* ctx) {
  // Uploads: signed URL (what the vendor's clients use) or an API key.
  r.Add("PUT", "/files/{entity}/{project}/{run}/upload/{name...}",
        Guarded("upload", [ctx](http::HttpRequest& req) {
          std::string name = req.PathParam("name");
          store::RunRef ref{req.PathParam("entity"), req.PathParam("project"),
                            req.PathParam("run")};
          if (Status s = ValidateUploadName(name); !s.ok()) return api::ErrorResponse(s);
          if (!api::ExtractApiKey(req).empty()) {
            auto who = ctx->auth->Authenticate(req);
            if (!who.ok()) return api::ErrorResponse(who.status());
            auto checked = CompatRunRef(*who, ref.entity, ref.project, ref.run_id);
            if (!checked.ok()) return api::ErrorResponse(checked.status());
          } else if (Status s = CheckSignature(ctx, req, ref, name); !s.ok()) {
            return api::ErrorResponse(s);
          }
          if (auto refused = api::ThrottleRequest(ctx, ref.entity)) return std::move(*refused);
          store::RunFile file;
          file.name = name;
          file.content_type = std::string(req.Header("content-type")).substr(0, 128);
          file.updated_ms = NowMillis();
          if (IsVendorMediaFile(name) && ctx->blobs != nullptr) {
            // The run must be the caller's (a signed URL names it; the key was checked above).
            auto run = ctx->store->GetRun(ref);
            if (!run.ok()) return api::ErrorResponse(run.status());
            auto sha = PutMediaBlob(ctx, ref.entity, req.body);
            if (!sha.ok()) return api::ErrorResponse(sha.status());
            file.sha256 = std::move(*sha);
            file.size = int64_t(req.body.size());
          } else {
            file.data = std::move(req.body);
          }
          auto put = ctx->store->PutRunFile(ref, file);
          if (!put.ok()) {
            if (put.status().code() == StatusCode::kUnavailable) {
              return Backpressure(1, put.status().message());
            }
            return api::ErrorResponse(put.status());
          }
          // The images of a list that name this file by path, after the file is stored so that
          // a line stored meanwhile finds it (file_stream.cc). Over the run's media budget, the
          // file stays a run file, the images stay without it, and the answer is 413.
          if (!file.sha256.empty()) {
            auto attached = ctx->store->AttachUploadedMedia(
                ref, name, int64_t(ctx->limits.max_run_media_bytes));
            if (!attached.ok()) return api::ErrorResponse(attached.status());
          }
          return api::JsonResponse(200, bj::object{{"name", put->name}, {"size", put->size}});
        }));

  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/files",
        api::Authed(ctx, [ctx](http::HttpRequest& req, const api::AuthContext& who) {
          auto ref = api::RunRefFromPath(req, who);
          if (!ref.ok()) return api::ErrorResponse(ref.status());
          auto files = ctx->store->ListRunFiles(*ref);
          if (!files.ok()) return api::ErrorResponse(files.status());
          std::string base = BaseUrl(req);
          bj::array out;
          for (const store::RunFile& f : *files) {
            out.push_back(bj::object{{"name", f.name},
                                     {"size", f.size},
                                     {"content_type", f.content_type},
                                     {"updated_ms", f.updated_ms},
                                     {"url", DownloadUrl(base, *ref, f.name)}});
          }
          return api::JsonResponse(200, bj::object{{"files", std::move(out)}});
        }));

  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/files/{name...}",
        api::Authed(ctx, [ctx](http::HttpRequest& req, const api::AuthContext& who) {
          auto ref = api::RunRefFromPath(req, who);
          if (!ref.ok()) return api::ErrorResponse(ref.status());
          auto file = ctx->store->GetRunFile(*ref, req.PathParam("name"));
          if (!file.ok()) return api::ErrorResponse(file.status());
          if (!file->sha256.empty()) {  // a vendor media file: its bytes are the blob
            if (ctx->blobs == nullptr) {
              return api::ErrorResponse(Status::Unavailable("this server has no blob store"));
            }
            auto bytes = ctx->blobs->Read(file->sha256, 0, uint64_t(file->size));
            if (!bytes.ok()) return api::ErrorResponse(bytes.status());
            file->data = std::move(*bytes);
          }
          bool attachment = false;
          std::string type = ServedType(file->name, &attachment);
          auto resp = http::HttpResponse::Text(200, std::move(file->data), type);
          resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
          resp.headers.emplace_back("Content-Security-Policy", "default-src 'none'; sandbox");
          if (attachment) resp.headers.emplace_back("Content-Disposition", "attachment");
          return resp;
        }));
}

}  // namespace cohort::compat
