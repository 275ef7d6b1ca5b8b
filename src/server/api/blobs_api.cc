// Routes: uploads to the blob store (docs/artifacts.md, "Uploads"): an upload's status, its
// parts, and its completion, which checks the bytes and records that the entity holds the blob.
#include <charconv>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "server/api/context.h"
#include "server/api/throttle.h"

namespace cohort::api {
namespace {

// The entity of the path (the caller's own; another is not found) and the digest.
Status CheckBlobPath(const http::HttpRequest& req, const AuthContext& who, ApiContext* ctx) {
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  if (req.PathParam("entity") != who.entity) {
    return Status::NotFound("entity '" + req.PathParam("entity") + "' not found");
  }
  if (!IsSha256Hex(req.PathParam("sha256"))) {
    return Status::InvalidArgument("sha256: expected 64 lowercase hex digits");
  }
  return Status::Ok();
}

// The ?size=N of the blob, within --max-artifact-file-bytes (kPayloadTooLarge otherwise).
Result<int64_t> SizeParam(const http::HttpRequest& req, const ApiLimits& limits) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> size, IntParam(req, "size"));
  if (!size || *size < 0) {
    return Status::InvalidArgument("size: the blob's size in bytes is required (?size=N)");
  }
  COHORT_RETURN_IF_ERROR(CheckArtifactFileSize(limits, "blob " + req.PathParam("sha256"),
                                               uint64_t(*size)));
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

void RegisterBlobRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/blobs/{entity}/{sha256}";

  r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          if (Status s = CheckBlobPath(req, who, ctx); !s.ok()) return ErrorResponse(s);
          auto size = SizeParam(req, ctx->limits);
          if (!size.ok()) return ErrorResponse(size.status());
          const std::string sha = req.PathParam("sha256");
          auto held = HoldsBlob(ctx, who.entity, sha, *size);
          if (!held.ok()) return ErrorResponse(held.status());
          bj::object out = BlobJson(sha, *size, *held);
          out["part_bytes"] = int64_t(limits::kBlobPartBytes);
          bj::array parts;
          if (!*held) {
            auto listed =
                ctx->blobs->ListParts(blob::OwnedUploadName(who.entity, sha), uint64_t(*size));
            if (!listed.ok()) return ErrorResponse(listed.status());
            for (int64_t n : *listed) parts.push_back(n);
          }
          out["parts"] = std::move(parts);
          return JsonResponse(200, out);
        }));

  r.Add("PUT", base + "/parts/{part}",
        Authed(ctx,
               [ctx](http::HttpRequest& req, const AuthContext& who) {
                 // The body streams into the store as it arrives (docs/artifacts.md, "Uploads").
                 http::BodyReader* body = req.body_reader;
                 // A refusal reads what is left of a part-sized body first: answered mid-body, the
                 // connection is closed under a client still sending, which may then see a reset
                 // instead of the answer (and retry what cannot succeed).
                 const auto read_rest = [body]() -> Status {
                   for (auto bytes = body->Next();; bytes = body->Next()) {
                     if (!bytes.ok()) return bytes.status();
                     if (bytes->empty()) return Status::Ok();
                   }
                 };
                 const auto drain = [body, &read_rest] {
                   if (body->length() - body->received() <= limits::kBlobPartBytes) {
                     (void)read_rest();
                   }
                 };
                 const auto refuse = [&drain](const Status& s) {
                   drain();
                   return ErrorResponse(s);
                 };
                 if (Status s = CheckBlobPath(req, who, ctx); !s.ok()) return refuse(s);
                 auto size = SizeParam(req, ctx->limits);
                 if (!size.ok()) return refuse(size.status());
                 const std::string part_text = req.PathParam("part");
                 int64_t part = -1;
                 auto [p, ec] =
                     std::from_chars(part_text.data(), part_text.data() + part_text.size(), part);
                 if (ec != std::errc() || p != part_text.data() + part_text.size()) {
                   return refuse(Status::InvalidArgument("part: expected a part number"));
                 }
                 if (Status s = blob::CheckPart(uint64_t(*size), part, body->length()); !s.ok()) {
                   return refuse(s);
                 }
                 if (auto refused = ThrottleRequest(ctx, who.entity)) {
                   drain();
                   return std::move(*refused);
                 }
                 const std::string sha = req.PathParam("sha256");
                 auto held = HoldsBlob(ctx, who.entity, sha, *size);
                 if (!held.ok()) return refuse(held.status());
                 const auto next = [body] { return body->Next(); };
                 if (*held) {
                   // A part of a blob the entity holds already is not needed: read, not stored
                   // again.
                   if (Status s = read_rest(); !s.ok()) return ErrorResponse(s);
                 } else if (Status s = ctx->blobs->PutPartFrom(
                                blob::OwnedUploadName(who.entity, sha), uint64_t(*size), part,
                                body->length(), next);
                            !s.ok()) {
                   return refuse(s);
                 }
                 return JsonResponse(200, bj::object{{"part", part},
                                                     {"size", int64_t(body->length())},
                                                     {"stored", *held}});
               }),
        // A backend that cannot write as the bytes come (S3) gathers the part in memory.
        http::RouteOptions{.stream_body = true,
                           .streamed_body_memory_bytes = limits::kBlobPartBytes});

  r.Add("POST", base + "/complete",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          if (Status s = CheckBlobPath(req, who, ctx); !s.ok()) return ErrorResponse(s);
          auto body = ParseBodyObject(req);
          if (!body.ok()) return ErrorResponse(body.status());
          json::FieldReader fields(*body, "");
          fields.RejectUnknown({"size"});
          int64_t size = fields.Int("size");
          if (!fields.ok()) return ErrorResponse(fields.status());
          if (size < 0) return ErrorResponse(Status::InvalidArgument("size: must be 0 or more"));
          if (Status s = CheckArtifactFileSize(ctx->limits, "blob " + req.PathParam("sha256"),
                                               uint64_t(size));
              !s.ok()) {
            return ErrorResponse(s);
          }
          const std::string sha = req.PathParam("sha256");
          auto held = HoldsBlob(ctx, who.entity, sha, size);
          if (!held.ok()) return ErrorResponse(held.status());
          if (*held) return JsonResponse(200, BlobJson(sha, size, true));
          auto verified =
              ctx->blobs->VerifyAs(blob::OwnedUploadName(who.entity, sha), uint64_t(size), sha);
          if (!verified.ok()) return ErrorResponse(verified.status());
          // Recorded before it is published (docs/artifacts.md, "Garbage collection").
          if (Status s = ctx->store->RecordBlob(who.entity, sha, size, NowMillis(), /*md5=*/"");
              !s.ok()) {
            return ErrorResponse(s);
          }
          if (Status s = (*verified)->Publish(); !s.ok()) return ErrorResponse(s);
          return JsonResponse(200, BlobJson(sha, size, true));
        }));
}

}  // namespace cohort::api
