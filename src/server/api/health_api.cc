// Routes: GET /healthz, GET /metrics (no key needed).
#include "core/version.h"
#include "server/api/context.h"

namespace cohort::api {

void RegisterHealthRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/healthz", [ctx](http::HttpRequest&) {
    // ingest_formats: the batch bodies POST .../batches reads (the agent picks binary when listed).
    return JsonResponse(200, bj::object{{"status", "ok"},
                                        {"version", kVersion},
                                        {"ingest_formats", bj::array{"json", "cohort-batch-v1"}}});
  });
  r.Add("GET", "/metrics", [ctx](http::HttpRequest&) {
    return http::HttpResponse::Text(200, ctx->metrics->RenderPrometheus(),
                                    "text/plain; version=0.0.4");
  });
}

}  // namespace cohort::api
