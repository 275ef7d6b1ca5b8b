#include "server/metrics.h"

#include <fmt/format.h>

#include "core/clock.h"

namespace cohort::server {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

Metrics::Metrics() = default;

void Metrics::Histogram::Observe(double seconds) {
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++counts[i];
  }
  ++count;
  sum += seconds;
}

void Metrics::ObserveRequest(const std::string& route, const std::string& method, int status,
                             int64_t duration_ns) {
  MutexLock lock(&mu_);
  ++requests_[{route, method, status}];
  request_latency_[route].Observe(double(duration_ns) / 1e9);
}

void Metrics::ObserveStore(const std::string& op, int64_t duration_ns) {
  MutexLock lock(&mu_);
  store_latency_[op].Observe(double(duration_ns) / 1e9);
}

void Metrics::RollRate(int64_t now_ms) {
  int64_t sec = now_ms / 1000;
  if (rate_second_ == 0) rate_second_ = sec;
  while (rate_second_ < sec) {
    ++rate_second_;
    rate_ring_[rate_second_ % rate_ring_.size()] = 0;
    if (sec - rate_second_ > int64_t(rate_ring_.size())) rate_second_ = sec - rate_ring_.size();
  }
}

void Metrics::AddIngest(int64_t points, bool duplicate) {
  MutexLock lock(&mu_);
  ++ingest_batches_;
  if (duplicate) {
    ++ingest_duplicates_;
    return;
  }
  ingest_points_ += uint64_t(points);
  RollRate(NowMillis());
  rate_ring_[rate_second_ % rate_ring_.size()] += points;
}

void Metrics::AddRejected(const std::string& reason) {
  MutexLock lock(&mu_);
  ++rejected_[reason];
}

void Metrics::SetGaugeSource(std::function<std::map<std::string, double>()> source) {
  MutexLock lock(&mu_);
  gauges_ = std::move(source);
}

void Metrics::SetTextSource(std::function<std::string(const std::string& entity)> source) {
  MutexLock lock(&mu_);
  text_ = std::move(source);
}

double Metrics::IngestRate() {
  MutexLock lock(&mu_);
  RollRate(NowMillis());
  int64_t total = 0;
  // Complete seconds only: skip the current one.
  for (size_t i = 0; i < rate_ring_.size(); ++i) {
    if (int64_t(i) == rate_second_ % int64_t(rate_ring_.size())) continue;
    total += rate_ring_[i];
  }
  return double(total) / double(rate_ring_.size() - 1);
}

std::string Metrics::RenderPrometheus(EntitySeries series, const std::string& entity) {
  double rate = IngestRate();
  std::function<std::map<std::string, double>()> gauges;
  std::string out;
  MutexLock lock(&mu_);
  gauges = gauges_;
  if (gauges) {
    for (const auto& [name, value] : gauges()) {
      out += fmt::format("# TYPE {} gauge\n{} {}\n", name, name, value);
    }
  }
  out += "# HELP cohort_http_requests_total HTTP requests by route pattern, method and status.\n";
  out += "# TYPE cohort_http_requests_total counter\n";
  for (const auto& [k, v] : requests_) {
    out +=
        fmt::format("cohort_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{}\"}} {}\n",
                    Escape(std::get<0>(k)), Escape(std::get<1>(k)), std::get<2>(k), v);
  }
  auto render_hist = [&](const std::string& name, const std::string& label,
                         const std::map<std::string, Histogram>& hs) {
    out += fmt::format("# TYPE {} histogram\n", name);
    for (const auto& [key, h] : hs) {
      for (size_t i = 0; i < kBuckets.size(); ++i) {
        out += fmt::format("{}_bucket{{{}=\"{}\",le=\"{}\"}} {}\n", name, label, Escape(key),
                           kBuckets[i], h.counts[i]);
      }
      out +=
          fmt::format("{}_bucket{{{}=\"{}\",le=\"+Inf\"}} {}\n", name, label, Escape(key), h.count);
      out += fmt::format("{}_sum{{{}=\"{}\"}} {}\n", name, label, Escape(key), h.sum);
      out += fmt::format("{}_count{{{}=\"{}\"}} {}\n", name, label, Escape(key), h.count);
    }
  };
  render_hist("cohort_http_request_duration_seconds", "route", request_latency_);
  render_hist("cohort_store_operation_duration_seconds", "op", store_latency_);
  out += "# TYPE cohort_ingest_points_total counter\n";
  out += fmt::format("cohort_ingest_points_total {}\n", ingest_points_);
  out += "# TYPE cohort_ingest_batches_total counter\n";
  out += fmt::format("cohort_ingest_batches_total{{result=\"stored\"}} {}\n",
                     ingest_batches_ - ingest_duplicates_);
  out +=
      fmt::format("cohort_ingest_batches_total{{result=\"duplicate\"}} {}\n", ingest_duplicates_);
  out += "# TYPE cohort_ingest_points_per_second gauge\n";
  out += fmt::format("cohort_ingest_points_per_second {}\n", rate);
  out += "# TYPE cohort_rejected_requests_total counter\n";
  for (const auto& [reason, v] : rejected_) {
    out += fmt::format("cohort_rejected_requests_total{{reason=\"{}\"}} {}\n", Escape(reason), v);
  }
  if (series != EntitySeries::kNone && text_) {
    out += text_(series == EntitySeries::kAll ? std::string() : entity);
  }
  return out;
}

}  // namespace cohort::server
