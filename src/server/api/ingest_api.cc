// Route: POST /api/v1/runs/{entity}/{project}/{run}/writers/{label}/batches — one writer's
// history rows, system samples and console lines, stored atomically and at most once per seq.
// The body is JSON (docs/api.md) or, with Content-Type application/vnd.cohort.batch, the binary
// batch encoding the agent sends (docs/formats.md, "Binary ingest batch"); a binary version this
// server does not read is answered 415, so that a client can fall back to JSON.
#include <unordered_set>

#include "core/clock.h"
#include "server/api/context.h"
#include "server/api/ingest_binary_decode.h"
#include "server/api/ingest_decode.h"
#include "server/api/throttle.h"

namespace cohort::api {

void RegisterIngestRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/batches",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          const bool binary = IsBinaryBatchContentType(req.Header("content-type"));
          if (binary) {
            auto version = BinaryBatchVersion(req.body);
            if (version && *version != kBinaryBatchVersion) {
              ctx->metrics->AddRejected("bad_batch");
              return http::HttpResponse::Error(415, "unsupported_media_type",
                                               "binary batch version " + std::to_string(*version) +
                                                   " is not supported (this server reads version " +
                                                   std::to_string(kBinaryBatchVersion) +
                                                   "); send JSON instead");
            }
          }
          auto batch = binary ? DecodeBinaryIngestBatch(req.body, ctx->limits)
                              : DecodeIngestBatch(req.body, ctx->limits);
          if (!batch.ok()) {
            ctx->metrics->AddRejected("bad_batch");
            return ErrorResponse(batch.status());
          }
          if (auto refused = ThrottlePoints(ctx, who.entity, CountPoints(*batch))) {
            return std::move(*refused);
          }
          batch->max_run_keys = RunKeyLimit(ctx, who.entity);
          int64_t t0 = MonoNanos();
          auto res = ctx->store->Ingest(*ref, req.PathParam("label"), *batch, NowMillis());
          ctx->metrics->ObserveStore("ingest", MonoNanos() - t0);
          if (!res.ok()) return ErrorResponse(res.status());
          ctx->metrics->AddIngest(res->points, res->duplicate);
          return JsonResponse(200, bj::object{{"duplicate", res->duplicate},
                                              {"points", res->points},
                                              {"next_step", res->next_step}});
        }));
}

}  // namespace cohort::api
