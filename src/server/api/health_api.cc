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
    // Series that name entities (and so list every entity with its activity) need an admin key.
    bool admin = false;
    if (!ExtractApiKey(req).empty()) {
      auto who = ctx->auth->Authenticate(req);
      if (!who.ok()) return ErrorResponse(who.status());
      admin = who->role == store::KeyRole::kAdmin;
    }
    return http::HttpResponse::Text(200, ctx->metrics->RenderPrometheus(admin),
                                    "text/plain; version=0.0.4");
  });
}

}  // namespace cohort::api
