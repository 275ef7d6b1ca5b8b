// Routes: GET /healthz (readiness, no key), GET /metrics (no key; per-entity series only for an
// admin key).
#include "core/limits.h"
#include "core/version.h"
#include "server/api/context.h"

namespace cohort::api {

void RegisterHealthRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/healthz", [ctx](http::HttpRequest&) {
    // Ready: accepting requests (not shutting down) and the store answers (ApiContext::ready).
    if (ctx->ready) {
      if (Status s = ctx->ready(); !s.ok()) {
        auto resp = JsonResponse(503, bj::object{{"status", "unavailable"},
                                                 {"version", kVersion},
                                                 {"reason", s.message()}});
        resp.headers.emplace_back("Retry-After", "1");
        return resp;
      }
    }
    // ingest_formats: the batch bodies POST .../batches reads (docs/api.md, "Ingest").
    return JsonResponse(
        200, bj::object{{"status", "ok"},
                        {"version", kVersion},
                        {"ingest_formats", bj::array{"json", bj::string(limits::kBatchFormatName)}}});
  });
  r.Add("GET", "/metrics", [ctx](http::HttpRequest& req) {
    // Series that name entities need an admin key: of the server's own entity for every
    // entity's (the operator's), else the caller's entity's alone (admin keys are per entity:
    // one must not learn which other entities exist or how busy they are).
    server::Metrics::EntitySeries series = server::Metrics::EntitySeries::kNone;
    std::string entity;
    if (!ExtractApiKey(req).empty()) {
      auto who = ctx->auth->Authenticate(req);
      if (!who.ok()) return ErrorResponse(who.status());
      if (who->role == store::KeyRole::kAdmin) {
        const bool all = !ctx->operator_entity.empty() && who->entity == ctx->operator_entity;
        series = all ? server::Metrics::EntitySeries::kAll : server::Metrics::EntitySeries::kOne;
        entity = who->entity;
      }
    }
    return http::HttpResponse::Text(200, ctx->metrics->RenderPrometheus(series, entity),
                                    "text/plain; version=0.0.4");
  });
}

}  // namespace cohort::api
