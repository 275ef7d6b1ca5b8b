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
#include <mutex>
#include <string>
#include <tuple>

namespace cohort::server {

class Metrics {
 public:
  Metrics();

  void ObserveRequest(const std::string& route, const std::string& method, int status,
                      int64_t duration_ns);
  void ObserveStore(const std::string& op, int64_t duration_ns);
  void AddIngest(int64_t points, bool duplicate);
  void AddRejected(const std::string& reason);

  // Gauges read at render time (connections open, ...), name -> value.
  void SetGaugeSource(std::function<std::map<std::string, double>()> source);
  // Prometheus text appended at render time for callers allowed to see it (per-entity usage of
  // the rate limiter: it names every entity).
  void SetTextSource(std::function<std::string()> source);

  // `with_entities`: include the text source's per-entity series.
  std::string RenderPrometheus(bool with_entities);
  // Points ingested per second over the last ~10 s.
  double IngestRate();

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> counts{};
    uint64_t count = 0;
    double sum = 0;
    void Observe(double seconds);
  };
  void RollRate(int64_t now_ms);

  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> request_latency_;
  std::map<std::string, Histogram> store_latency_;
  std::map<std::string, uint64_t> rejected_;
  uint64_t ingest_points_ = 0, ingest_batches_ = 0, ingest_duplicates_ = 0;
  // Ring of per-second point counts for the rate gauge.
  std::array<int64_t, 10> rate_ring_{};
  int64_t rate_second_ = 0;
  std::function<std::map<std::string, double>()> gauges_;
  std::function<std::string()> text_;
};

}  // namespace cohort::server
