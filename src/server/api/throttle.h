// Throttle: applies the per-entity rate limits (limits::RateLimiter) to API requests and
// answers refusals as 429 with Retry-After and RateLimit-* headers and a JSON error body.
//
// Threading: thread-safe (the limiter and metrics are).
#pragma once

#include <optional>
#include <string>

#include "server/http/message.h"
#include "store/ingest_batch.h"

namespace cohort::api {

struct ApiContext;

// Charges one request to `entity`; a 429 response when its request bucket is empty, nothing
// when the request may go on (or no limiter is configured).
std::optional<http::HttpResponse> ThrottleRequest(ApiContext* ctx, const std::string& entity);
// Charges `count` more requests of a request ThrottleRequest charged already (the writes of one
// GraphQL mutation beyond the first): limits::RateLimiter::AdmitRequests.
std::optional<http::HttpResponse> ThrottleMoreRequests(ApiContext* ctx, const std::string& entity,
                                                       int64_t count);
// Charges `points` ingested values to `entity`; a 429 response when its points bucket is empty.
std::optional<http::HttpResponse> ThrottlePoints(ApiContext* ctx, const std::string& entity,
                                                 int64_t points);
// The scalar values of a batch (history and system rows): what ThrottlePoints charges.
int64_t CountPoints(const store::IngestBatch& batch);
// The distinct keys one run of `entity` may hold (its tier's keys_per_run; the default without a
// limiter); the ingest routes put it in IngestBatch::max_run_keys. 0: unlimited.
int64_t RunKeyLimit(ApiContext* ctx, const std::string& entity);

}  // namespace cohort::api
