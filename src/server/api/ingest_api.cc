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
  COHORT_ASSIGN_OR_RETURN(std::string stream,
                          ParseBatchOrderedHeader(req.Header("cohort-batch-ordered")));
  store::IngestBatch batch;
  if (!IsBinaryBatchContentType(req.Header("content-type"))) {
    COHORT_ASSIGN_OR_RETURN(batch, DecodeIngestBatch(req.body, limits));
  } else {
    COHORT_ASSIGN_OR_RETURN(int64_t seq, ParseBatchSeqHeader(req.Header("cohort-batch-seq")));
    COHORT_ASSIGN_OR_RETURN(batch, DecodeBinaryIngestBatch(req.body, seq, limits));
  }
  if (!stream.empty() && batch.seq <= 0) {
    return Status::InvalidArgument(std::string(limits::kBatchOrderedHeader) +
                                   " header: the batch has no seq to keep");
  }
  batch.ordered_stream = std::move(stream);
  return batch;
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
          SetMediaLimits(ctx->limits, &*batch);
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
          if (res->media_refused > 0) {
            // Said in the answer (the agent logs it as a warning) and counted: stored without
            // those rows is not stored.
            ack["media_refused"] = res->media_refused;
            ack["media_refused_reason"] = res->media_refused_reason;
            ctx->metrics->AddRejected("media_limits");
          }
          return JsonResponse(200, ack);
        }));
}

void SetMediaLimits(const ApiLimits& limits, store::IngestBatch* batch) {
  batch->max_media_file_bytes = int64_t(limits.max_media_file_bytes);
  batch->max_media_per_step = limits.max_media_per_step;
  batch->max_run_media_bytes = int64_t(limits.max_run_media_bytes);
}

}  // namespace cohort::api
