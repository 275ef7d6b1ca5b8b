// Metrics: the server's counters and latency histograms, rendered in Prometheus text format
// for GET /metrics.
//
// Threading: thread-safe; the per-request path takes one short mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "core/mutex.h"

namespace cohort::server {

class Metrics {
 public:
  Metrics();

  void ObserveRequest(const std::string& route, const std::string& method, int status,
                      int64_t duration_ns) COHORT_EXCLUDES(mu_);
  void ObserveStore(const std::string& op, int64_t duration_ns) COHORT_EXCLUDES(mu_);
  void AddIngest(int64_t points, bool duplicate) COHORT_EXCLUDES(mu_);
  void AddRejected(const std::string& reason) COHORT_EXCLUDES(mu_);

  // Gauges read at render time (connections open, ...), name -> value. The sources run with
  // mu_ held: they must not call back into Metrics.
  void SetGaugeSource(std::function<std::map<std::string, double>()> source) COHORT_EXCLUDES(mu_);
  // Prometheus text appended at render time for callers allowed to see it (per-entity usage of
  // the rate limiter): the series of the entity it is given, or of every entity for "".
  void SetTextSource(std::function<std::string(const std::string& entity)> source)
      COHORT_EXCLUDES(mu_);

  // Which of the text source's per-entity series a rendering includes.
  enum class EntitySeries { kNone, kOne, kAll };
  // `entity`: the one entity of kOne.
  std::string RenderPrometheus(EntitySeries series, const std::string& entity = "")
      COHORT_EXCLUDES(mu_);
  // Points ingested per second over the last ~10 s.
  double IngestRate() COHORT_EXCLUDES(mu_);

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> counts{};
    uint64_t count = 0;
    double sum = 0;
    void Observe(double seconds);
  };
  void RollRate(int64_t now_ms) COHORT_REQUIRES(mu_);

  Mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, Histogram> request_latency_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, Histogram> store_latency_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> rejected_ COHORT_GUARDED_BY(mu_);
  uint64_t ingest_points_ COHORT_GUARDED_BY(mu_) = 0;
  uint64_t ingest_batches_ COHORT_GUARDED_BY(mu_) = 0;
  uint64_t ingest_duplicates_ COHORT_GUARDED_BY(mu_) = 0;
  // Ring of per-second point counts for the rate gauge.
  std::array<int64_t, 10> rate_ring_ COHORT_GUARDED_BY(mu_){};
  int64_t rate_second_ COHORT_GUARDED_BY(mu_) = 0;
  std::function<std::map<std::string, double>()> gauges_ COHORT_GUARDED_BY(mu_);
  std::function<std::string(const std::string&)> text_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::server
