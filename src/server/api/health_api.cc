// Routes: GET /healthz (readiness, no key), GET /metrics (no key; per-entity series only for an
// admin key).
#include <cstdio>
#include <memory>

#include "core/limits.h"
#include "core/mutex.h"
#include "core/version.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

// Why the server is not ready, in full (the database's host, port and driver text), for the
// server's log: written when it changes, and once when the server is ready again, not at every
// probe of a load balancer.
class ReadinessLog {
 public:
  void Note(const Status& s) COHORT_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    const std::string now = s.ok() ? std::string() : s.message();
    if (now == last_) return;
    if (now.empty()) {
      std::fprintf(stderr, "cohort server: ready again\n");
    } else {
      std::fprintf(stderr, "cohort server: not ready: %s\n", now.c_str());
    }
    last_ = now;
  }

 private:
  Mutex mu_;
  std::string last_ COHORT_GUARDED_BY(mu_);
};

// The reason /healthz gives anyone (it needs no key): the message up to its first ": ", e.g.
// "the store does not answer", without what follows (which names the database's address).
std::string PublicReason(const std::string& message) {
  const size_t colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(0, colon);
}

}  // namespace

void RegisterHealthRoutes(http::Router& r, ApiContext* ctx) {
  auto log = std::make_shared<ReadinessLog>();
  r.Add("GET", "/healthz", [ctx, log](http::HttpRequest&) {
    // Ready: accepting requests (not shutting down) and the store answers (ApiContext::ready).
    if (ctx->ready) {
      Status s = ctx->ready();
      log->Note(s);
      if (!s.ok()) {
        auto resp = JsonResponse(503, bj::object{{"status", "unavailable"},
                                                 {"version", kVersion},
                                                 {"reason", PublicReason(s.message())}});
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
