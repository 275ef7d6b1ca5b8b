// Route: POST /api/v1/runs/{entity}/{project}/{run}/writers/{label}/batches — one writer's
// history rows, system samples and console lines, stored atomically and at most once per seq.
// The body is JSON (docs/api.md) or, with Content-Type application/vnd.cohort.batch, a batch v4
// (docs/formats.md) with its seq in the Cohort-Batch-Seq header: what the agent posts, byte for
// byte the batch the client encoded. A binary version this server does not read is answered
// 415. Both decoders yield the columnar batch (store/ingest_batch.h), limits checked once.
#include "core/batch_format.h"
#include "core/clock.h"
#include "core/limits.h"
#include "server/alerts/alert_engine.h"
#include "server/api/context.h"
#include "server/api/ingest_binary_decode.h"
#include "server/api/ingest_decode.h"
#include "server/api/throttle.h"

namespace cohort::api {
namespace {

Result<store::IngestBatch> DecodeBody(const http::HttpRequest& req, const ApiLimits& limits) {
  if (!IsBinaryBatchContentType(req.Header("content-type"))) {
    return DecodeIngestBatch(req.body, limits);
  }
  COHORT_ASSIGN_OR_RETURN(int64_t seq, ParseBatchSeqHeader(req.Header("cohort-batch-seq")));
  return DecodeBinaryIngestBatch(req.body, seq, limits);
}

}  // namespace

void RegisterIngestRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/batches",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          if (IsBinaryBatchContentType(req.Header("content-type"))) {
            auto version = batch::Version(req.body);
            if (version && *version != limits::kBatchVersion) {
              ctx->metrics->AddRejected("bad_batch");
              return http::HttpResponse::Error(
                  415, "unsupported_media_type",
                  "binary batch version " + std::to_string(*version) +
                      " is not supported (this server reads version " +
                      std::to_string(limits::kBatchVersion) + ", " +
                      std::string(limits::kBatchFormatName) + ")");
            }
          }
          auto batch = DecodeBody(req, ctx->limits);
          if (!batch.ok()) {
            ctx->metrics->AddRejected("bad_batch");
            return ErrorResponse(batch.status());
          }
          if (auto refused = ThrottlePoints(ctx, who.entity, batch->points())) {
            return std::move(*refused);
          }
          batch->max_run_keys = RunKeyLimit(ctx, who.entity);
          const MediaRefusal taken = TakeMediaPastLimits(ctx->limits, &*batch);
          int64_t t0 = MonoNanos();
          const int64_t now = NowMillis();
          auto res = ctx->store->Ingest(*ref, req.PathParam("label"), *batch, now);
          ctx->metrics->ObserveStore("ingest", MonoNanos() - t0);
          if (!res.ok()) return ErrorResponse(res.status());
          if (ctx->alerts) ctx->alerts->OnBatch(*ref, req.PathParam("label"), *batch, *res, now);
          ctx->metrics->AddIngest(res->points, res->duplicate);
          bj::object ack{{"duplicate", res->duplicate},
                         {"points", res->points},
                         {"next_step", res->next_step}};
          const int64_t refused = res->duplicate ? 0 : taken.rows + res->media_refused;
          if (refused > 0) {
            // Said in the answer (the agent logs it as a warning) and counted: stored without
            // those rows is not stored.
            ack["media_refused"] = refused;
            ack["media_refused_reason"] = taken.rows > 0 ? taken.reason : res->media_refused_reason;
            ctx->metrics->AddRejected("media_limits");
          }
          return JsonResponse(200, ack);
        }));
}

MediaRefusal TakeMediaPastLimits(const ApiLimits& limits, store::IngestBatch* batch) {
  MediaRefusal out;
  std::vector<store::MediaPoint>& media = batch->media;
  size_t kept = 0;
  for (size_t i = 0; i < media.size(); ++i) {
    const store::MediaPoint& m = media[i];
    std::string why;
    if (uint64_t(m.size) > limits.max_media_file_bytes) {
      why = "media (key '" + m.key + "', step " + std::to_string(m.step) +
            "): " + std::to_string(m.size) + " bytes, more than the limit of " +
            std::to_string(limits.max_media_file_bytes) +
            " bytes per media file (--max-media-file-bytes)";
    } else if (limits.max_media_per_step > 0 && m.index >= limits.max_media_per_step) {
      why = "media (key '" + m.key + "', step " + std::to_string(m.step) + "): more than " +
            std::to_string(limits.max_media_per_step) + " media in one step (--max-media-per-step)";
    }
    if (why.empty()) {
      if (kept != i) media[kept] = std::move(media[i]);
      ++kept;
      continue;
    }
    if (out.rows++ == 0) out.reason = std::move(why);
  }
  media.resize(kept);
  batch->max_media_per_step = limits.max_media_per_step;
  batch->max_run_media_bytes = int64_t(limits.max_run_media_bytes);
  return out;
}

}  // namespace cohort::api
