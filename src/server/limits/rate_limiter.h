// RateLimiter: per-entity token buckets for requests and ingested points, with limits taken
// from named tiers (free / teams / enterprise, or any the configuration defines).
//
// Each entity has two buckets: requests (one token per authenticated request) and points (one
// token per ingested value). A bucket holds up to its burst and refills at its rate. The request
// bucket admits a request when it holds a whole token. The points bucket admits a batch whenever
// it is not in debt and then takes all of the batch's points, possibly going negative, so that a
// batch larger than the burst still passes, and the average stays at the rate. A refused call
// gets how long to wait before a retry can succeed (Retry-After).
//
// A tier with a rate of 0 for a bucket is unlimited for it. An entity not listed in the
// configuration gets the default tier. A tier also bounds the distinct keys of a run
// (keys_per_run), which the ingest routes pass to the store with each batch.
//
// Entities are tracked from their first authenticated request on (they are bounded by the
// entities that have keys).
//
// Threading: thread-safe; each call takes one short mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"

namespace cohort::limits {

// Distinct keys (history and system, all writers) one run may hold unless its tier says
// otherwise: bounds a run's series (and the memory of listing them) against a client that logs
// millions of distinct keys.
inline constexpr int64_t kDefaultKeysPerRun = 100000;

struct TierLimits {
  double requests_per_second = 0;             // 0: unlimited
  double request_burst = 0;                   // bucket size; 0: one second's worth (at least 1)
  double points_per_second = 0;               // 0: unlimited
  double point_burst = 0;                     // bucket size; 0: one second's worth
  int64_t keys_per_run = kDefaultKeysPerRun;  // 0: unlimited
};

struct LimitsConfig {
  std::map<std::string, TierLimits> tiers;
  std::string default_tier;
  std::map<std::string, std::string> entity_tiers;  // entity -> tier name
};

// The built-in tiers (free, teams, enterprise) with "enterprise" (unlimited) as the default:
// a server without a limits file never throttles.
LimitsConfig DefaultLimitsConfig();

// Parses a limits file (JSON; format in docs/operations.md). Tiers given replace built-in ones
// of the same name; the others stay. Errors name the offending field.
Result<LimitsConfig> ParseLimitsConfig(std::string_view json_text);
Result<LimitsConfig> LoadLimitsConfig(const std::string& path);

// The outcome of one admission check.
struct Decision {
  bool allowed = true;
  double retry_after_s = 0;  // when refused: seconds until a retry can pass
  double limit = 0;          // the bucket's rate per second (0: unlimited)
  double remaining = 0;      // tokens left after this call (0 when refused or in debt)
  std::string tier;
};

// Per-entity counters since start, for /metrics.
struct EntityUsage {
  std::string entity;
  std::string tier;
  uint64_t requests = 0;           // admitted requests
  uint64_t points = 0;             // admitted points
  uint64_t rejected_requests = 0;  // refused by the request bucket
  uint64_t rejected_points = 0;    // batches refused by the points bucket
};

class RateLimiter {
 public:
  explicit RateLimiter(LimitsConfig config);

  // Charges one request to `entity`. now_s: a monotonic clock in seconds.
  Decision AdmitRequest(std::string_view entity, double now_s) COHORT_EXCLUDES(mu_);
  // Charges `count` more requests of a call that was charged `charged_before` already (a GraphQL
  // mutation's other writes, after the one its arrival cost): admitted when the bucket holds
  // what min(count + charged_before, burst) asks beyond those, leaving it in debt past the burst;
  // all or nothing.
  Decision AdmitRequests(std::string_view entity, int64_t count, int64_t charged_before,
                         double now_s) COHORT_EXCLUDES(mu_);
  // Charges `points` ingested values to `entity`.
  Decision AdmitPoints(std::string_view entity, int64_t points, double now_s) COHORT_EXCLUDES(mu_);
  // The same with the steady clock.
  Decision AdmitRequest(std::string_view entity);
  Decision AdmitRequests(std::string_view entity, int64_t count, int64_t charged_before);
  Decision AdmitPoints(std::string_view entity, int64_t points);

  std::string TierOf(std::string_view entity) const;
  // The tier's distinct keys per run for `entity` (0: unlimited).
  int64_t KeysPerRun(std::string_view entity) const;
  std::vector<EntityUsage> Usage() const COHORT_EXCLUDES(mu_);

 private:
  struct Bucket {
    double tokens = 0;
    double last_s = -1;  // < 0: never used (starts full)
  };
  struct State {
    const TierLimits* tier = nullptr;
    std::string tier_name;
    Bucket requests, points;
    EntityUsage usage;
  };
  State& StateFor(std::string_view entity) COHORT_REQUIRES(mu_);

  const LimitsConfig config_;
  mutable Mutex mu_;
  std::unordered_map<std::string, State> states_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::limits
