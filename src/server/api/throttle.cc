#include "server/api/throttle.h"

#include <fmt/format.h>

#include <cmath>

#include "server/api/context.h"
#include "server/limits/rate_limiter.h"

namespace cohort::api {
namespace {

http::HttpResponse Refusal(const limits::Decision& d, std::string_view what, std::string reason,
                           ApiContext* ctx) {
  if (ctx->metrics) ctx->metrics->AddRejected(std::move(reason));
  // Whole seconds, rounded up, at least 1 (clients sleep for it).
  int64_t retry = std::max<int64_t>(1, int64_t(std::ceil(d.retry_after_s)));
  auto resp = http::HttpResponse::Error(
      429, "rate_limited",
      fmt::format("rate limit of tier '{}' exceeded: {} per second; retry after {} s", d.tier, what,
                  retry));
  std::string r = std::to_string(retry);
  resp.headers.emplace_back("Retry-After", r);
  resp.headers.emplace_back("RateLimit-Limit", fmt::format("{}", d.limit));
  resp.headers.emplace_back("RateLimit-Remaining", "0");
  resp.headers.emplace_back("RateLimit-Reset", r);
  return resp;
}

}  // namespace

std::optional<http::HttpResponse> ThrottleRequest(ApiContext* ctx, const std::string& entity) {
  if (ctx->limiter == nullptr) return std::nullopt;
  limits::Decision d = ctx->limiter->AdmitRequest(entity);
  if (d.allowed) return std::nullopt;
  return Refusal(d, fmt::format("{} requests", d.limit), "rate_limited_requests", ctx);
}

std::optional<http::HttpResponse> ThrottleMoreRequests(ApiContext* ctx, const std::string& entity,
                                                       int64_t count) {
  if (ctx->limiter == nullptr) return std::nullopt;
  limits::Decision d = ctx->limiter->AdmitRequests(entity, count, /*charged_before=*/1);
  if (d.allowed) return std::nullopt;
  return Refusal(d, fmt::format("{} requests", d.limit), "rate_limited_requests", ctx);
}

std::optional<http::HttpResponse> ThrottlePoints(ApiContext* ctx, const std::string& entity,
                                                 int64_t points) {
  if (ctx->limiter == nullptr) return std::nullopt;
  limits::Decision d = ctx->limiter->AdmitPoints(entity, points);
  if (d.allowed) return std::nullopt;
  return Refusal(d, fmt::format("{} points", d.limit), "rate_limited_points", ctx);
}

int64_t RunKeyLimit(ApiContext* ctx, const std::string& entity) {
  return ctx->limiter ? ctx->limiter->KeysPerRun(entity) : limits::kDefaultKeysPerRun;
}

int64_t CountPoints(const store::IngestBatch& batch) { return batch.points(); }

}  // namespace cohort::api
