// Routes: uploads to the blob store (docs/artifacts.md, "Uploads"): an upload's status, its
// parts, and its completion, which checks the bytes and records that the entity holds the blob.
#include <algorithm>
#include <charconv>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "server/api/context.h"
#include "server/api/throttle.h"

namespace cohort::api {
namespace {

// What an upload route names: a blob by its digest (.../{sha256}), or an upload by an id its
// client made up before the digest was known (.../uploads/{upload}: a client hashing a file
// while it sends it), whose completion brings the digest.
struct UploadTarget {
  std::string sha256;       // the blob's; empty for an upload by id
  std::string upload_name;  // the blob store's name of the entity's upload
  std::string what;         // "blob <sha256>" or "upload <id>", for messages
};

bool IsUploadId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The entity of the path (the caller's own; another is not found) and the digest or the id.
Result<UploadTarget> TargetOf(const http::HttpRequest& req, const AuthContext& who,
                              ApiContext* ctx) {
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  if (req.PathParam("entity") != who.entity) {
    return Status::NotFound("entity '" + req.PathParam("entity") + "' not found");
  }
  if (const std::string id = req.PathParam("upload"); !id.empty()) {
    if (!IsUploadId(id)) {
      return Status::InvalidArgument(
          "upload: expected 32 lowercase hex digits (an id the "
          "client makes up for the upload)");
    }
    // "upload <id>" is never a digest: an upload by id never shares parts with one by digest.
    return UploadTarget{"", blob::OwnedUploadName(who.entity, "upload " + id), "upload " + id};
  }
  const std::string sha = req.PathParam("sha256");
  if (!IsSha256Hex(sha)) return Status::InvalidArgument("sha256: expected 64 lowercase hex digits");
  return UploadTarget{sha, blob::OwnedUploadName(who.entity, sha), "blob " + sha};
}

// The ?size=N of the blob, within --max-artifact-file-bytes (kPayloadTooLarge otherwise).
Result<int64_t> SizeParam(const http::HttpRequest& req, const ApiLimits& limits,
                          const UploadTarget& target) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> size, IntParam(req, "size"));
  if (!size || *size < 0) {
    return Status::InvalidArgument("size: the blob's size in bytes is required (?size=N)");
  }
  COHORT_RETURN_IF_ERROR(CheckArtifactFileSize(limits, target.what, uint64_t(*size)));
  return *size;
}

bj::object BlobJson(const std::string& sha256, int64_t size, bool stored) {
  return bj::object{{"sha256", sha256}, {"size", size}, {"stored", stored}};
}

}  // namespace

Result<bool> HoldsBlob(ApiContext* ctx, const std::string& entity, const std::string& sha256,
                       int64_t size) {
  COHORT_RETURN_IF_ERROR(ctx->store->TouchBlob(entity, sha256, NowMillis()));
  COHORT_ASSIGN_OR_RETURN(auto held, ctx->store->HeldBlobs(entity, {sha256}));
  auto it = held.find(sha256);
  if (it == held.end()) return false;
  if (it->second != size) {
    return Status::InvalidArgument("blob " + sha256 + " has " + std::to_string(it->second) +
                                   " bytes, not " + std::to_string(size));
  }
  Result<uint64_t> stored = ctx->blobs->Stat(sha256);
  if (!stored.ok()) {
    if (stored.status().code() == StatusCode::kNotFound) return false;
    return stored.status();
  }
  return true;
}

namespace {

// GET: the upload's status (its stored parts), or that the blob is held.
http::HttpResponse UploadStatus(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto target = TargetOf(req, who, ctx);
  if (!target.ok()) return ErrorResponse(target.status());
  auto size = SizeParam(req, ctx->limits, *target);
  if (!size.ok()) return ErrorResponse(size.status());
  bool held = false;
  if (!target->sha256.empty()) {
    auto holds = HoldsBlob(ctx, who.entity, target->sha256, *size);
    if (!holds.ok()) return ErrorResponse(holds.status());
    held = *holds;
  }
  bj::object out = target->sha256.empty()
                       ? bj::object{{"upload", req.PathParam("upload")}, {"size", *size}}
                       : BlobJson(target->sha256, *size, held);
  out["part_bytes"] = int64_t(limits::kBlobPartBytes);
  bj::array parts;
  if (!held) {
    auto listed = ctx->blobs->ListParts(target->upload_name, uint64_t(*size));
    if (!listed.ok()) return ErrorResponse(listed.status());
    for (int64_t n : *listed) parts.push_back(n);
  }
  out["parts"] = std::move(parts);
  return JsonResponse(200, out);
}

// PUT: one part, streamed into the store as it arrives (docs/artifacts.md, "Uploads").
http::HttpResponse UploadPart(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  http::BodyReader* body = req.body_reader;
  const auto read_rest = [body]() -> Status {
    for (auto bytes = body->Next();; bytes = body->Next()) {
      if (!bytes.ok()) return bytes.status();
      if (bytes->empty()) return Status::Ok();
    }
  };
  // A refusal reads what is left of a part-sized body first: answered mid-body, the connection
  // is closed under a client still sending, which may then see a reset instead of the answer
  // (and retry what cannot succeed).
  const auto drain = [body, &read_rest] {
    if (body->length() - body->received() <= limits::kBlobPartBytes) (void)read_rest();
  };
  const auto refuse = [&drain](const Status& s) {
    drain();
    return ErrorResponse(s);
  };
  // Charged here, once (the route's wrapper does not): a refusal drains the body too.
  if (auto refused = ThrottleRequest(ctx, who.entity)) {
    drain();
    return std::move(*refused);
  }
  auto target = TargetOf(req, who, ctx);
  if (!target.ok()) return refuse(target.status());
  auto size = SizeParam(req, ctx->limits, *target);
  if (!size.ok()) return refuse(size.status());
  const std::string part_text = req.PathParam("part");
  int64_t part = -1;
  auto [p, ec] = std::from_chars(part_text.data(), part_text.data() + part_text.size(), part);
  if (ec != std::errc() || p != part_text.data() + part_text.size()) {
    return refuse(Status::InvalidArgument("part: expected a part number"));
  }
  if (Status s = blob::CheckPart(uint64_t(*size), part, body->length()); !s.ok()) {
    return refuse(s);
  }
  bool held = false;
  if (!target->sha256.empty()) {
    auto holds = HoldsBlob(ctx, who.entity, target->sha256, *size);
    if (!holds.ok()) return refuse(holds.status());
    held = *holds;
  }
  if (held) {
    // A part of a blob the entity holds already is not needed: read, not stored again.
    if (Status s = read_rest(); !s.ok()) return ErrorResponse(s);
  } else if (Status s = ctx->blobs->PutPartFrom(target->upload_name, uint64_t(*size), part,
                                                body->length(), [body] { return body->Next(); });
             !s.ok()) {
    return refuse(s);
  }
  return JsonResponse(
      200, bj::object{{"part", part}, {"size", int64_t(body->length())}, {"stored", held}});
}

// POST: checks the bytes (every part there, the size and the SHA-256: the path's, or the body's
// for an upload by id), records that the entity holds the blob and publishes it.
http::HttpResponse CompleteUpload(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto target = TargetOf(req, who, ctx);
  if (!target.ok()) return ErrorResponse(target.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.status());
  const bool by_id = target->sha256.empty();
  json::FieldReader fields(*body, "");
  fields.RejectUnknown(by_id ? std::initializer_list<std::string_view>{"size", "sha256"}
                             : std::initializer_list<std::string_view>{"size"});
  const int64_t size = fields.Int("size");
  const std::string sha = by_id ? fields.String("sha256") : target->sha256;
  if (!fields.ok()) return ErrorResponse(fields.status());
  if (size < 0) return ErrorResponse(Status::InvalidArgument("size: must be 0 or more"));
  if (!IsSha256Hex(sha)) {
    return ErrorResponse(Status::InvalidArgument("sha256: expected 64 lowercase hex digits"));
  }
  if (Status s = CheckArtifactFileSize(ctx->limits, target->what, uint64_t(size)); !s.ok()) {
    return ErrorResponse(s);
  }
  auto held = HoldsBlob(ctx, who.entity, sha, size);
  if (!held.ok()) return ErrorResponse(held.status());
  // Held already: an upload by id is then left to `cohort gc` (abandoned uploads).
  if (*held) return JsonResponse(200, BlobJson(sha, size, true));
  // A media row may name the blob before it is uploaded, with the size its client declared (the
  // media limits were checked against it): another size is refused, nothing stored.
  auto missized = ctx->store->FindMediaOfOtherSize(who.entity, sha, size);
  if (!missized.ok()) return ErrorResponse(missized.status());
  if (*missized) {
    const store::MisSizedMedia& m = **missized;
    return ErrorResponse(Status::InvalidArgument(
        "blob " + sha + ": the media row of run " + m.run_id + ", key '" + ShownValue(m.key) +
        "', step " + std::to_string(m.step) + ", index " + std::to_string(m.index) +
        " names it with " + std::to_string(m.size) + " bytes, the upload says " +
        std::to_string(size) + ": nothing is stored (log that media again with its true size)"));
  }
  auto verified = ctx->blobs->VerifyAs(target->upload_name, uint64_t(size), sha);
  if (!verified.ok()) return ErrorResponse(verified.status());
  // Recorded before it is published (docs/artifacts.md, "Garbage collection").
  if (Status s = ctx->store->RecordBlob(who.entity, sha, size, NowMillis(), /*md5=*/""); !s.ok()) {
    return ErrorResponse(s);
  }
  if (Status s = (*verified)->Publish(); !s.ok()) return ErrorResponse(s);
  return JsonResponse(200, BlobJson(sha, size, true));
}

}  // namespace

void RegisterBlobRoutes(http::Router& r, ApiContext* ctx) {
  // A part's memory, reserved from --max-body-bytes-in-flight while its PUT runs: one piece of
  // the body where the store takes the bytes as they come (local and S3), the whole part where
  // it gathers them (BlobStore's base PutPartFrom).
  const bool streams = ctx->blobs != nullptr && ctx->blobs->WritesPartsAsTheyCome();
  const http::RouteOptions part_options{
      .stream_body = true,
      .streamed_body_memory_bytes = streams ? http::kBodyChunkBytes : limits::kBlobPartBytes};
  for (const std::string base :
       {"/api/v1/blobs/{entity}/{sha256}", "/api/v1/blobs/{entity}/uploads/{upload}"}) {
    r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
            return UploadStatus(ctx, req, who);
          }));
    r.Add("PUT", base + "/parts/{part}",
          AuthedChargedByHandler(ctx,
                                 [ctx](http::HttpRequest& req, const AuthContext& who) {
                                   return UploadPart(ctx, req,
                                                     who);  // charged once its body can be drained
                                 }),
          part_options);
    r.Add("POST", base + "/complete",
          Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
            return CompleteUpload(ctx, req, who);
          }));
  }
}

}  // namespace cohort::api
