#include "insight/heatmap.h"

#include <algorithm>
#include <limits>

namespace cohort::insight {
namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// b - a for a <= b, exact over the whole int64 range.
uint64_t Distance(int64_t a, int64_t b) { return uint64_t(b) - uint64_t(a); }
}  // namespace

int TimeColumns::Column(int64_t t) const {
  if (count <= 0 || t < time_min) return -1;
  const uint64_t col = Distance(time_min, t) / bucket_ms;
  return col < uint64_t(count) ? int(col) : -1;
}

int64_t TimeColumns::Start(int j) const {
  return int64_t(uint64_t(time_min) + uint64_t(j) * bucket_ms);  // within [time_min, tmax]
}

TimeColumns ChooseTimeColumns(int64_t tmin, int64_t tmax, int columns) {
  TimeColumns c;
  c.time_min = tmin;
  // The span less one, so that the whole int64 range fits: columns of width `per + 1` cover it.
  const uint64_t last = tmax > tmin ? Distance(tmin, tmax) : 0;
  const uint64_t n = uint64_t(std::max(columns, 1));
  const uint64_t per = last / n;
  c.bucket_ms = per == UINT64_MAX ? UINT64_MAX : per + 1;
  c.count = int(std::min<uint64_t>(last / c.bucket_ms + 1, n));
  return c;
}

std::vector<double> StepTimeColumns(const TimeColumns& c,
                                    const std::vector<std::pair<int64_t, int64_t>>& samples) {
  std::vector<double> dt(size_t(c.count), 0), ds(size_t(c.count), 0);
  for (size_t i = 1; i < samples.size(); ++i) {
    const auto [s0, t0] = samples[i - 1];
    const auto [s1, t1] = samples[i];
    if (s1 <= s0 || t1 < t0) continue;
    const int col = c.Column(t1);
    if (col < 0) continue;
    dt[size_t(col)] += double(Distance(t0, t1));
    ds[size_t(col)] += double(s1 - s0);
  }
  std::vector<double> out(size_t(c.count), kNaN);
  for (size_t j = 0; j < out.size(); ++j) {
    if (ds[j] > 0) out[j] = dt[j] / ds[j];
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> BucketCorners(const std::vector<series::Bucket>& buckets) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const series::Bucket& b : buckets) {
    if (b.count <= 0) continue;
    if (out.empty() || out.back().first != b.step_min) out.push_back({b.step_min, b.time_min});
    if (b.step_max != b.step_min) out.push_back({b.step_max, b.time_max});
  }
  return out;
}

std::vector<double> MeanColumns(const TimeColumns& c,
                                const std::vector<std::vector<series::Bucket>>& series) {
  std::vector<double> sum(size_t(c.count), 0), n(size_t(c.count), 0);
  for (const auto& buckets : series) {
    for (const series::Bucket& b : buckets) {
      const int64_t valid = b.count - b.nan_count;
      if (valid <= 0) continue;
      if (b.time_max < b.time_min) continue;
      const int col = c.Column(b.time_min + int64_t(Distance(b.time_min, b.time_max) / 2));
      if (col < 0) continue;
      sum[size_t(col)] += b.sum;
      n[size_t(col)] += double(valid);
    }
  }
  std::vector<double> out(size_t(c.count), kNaN);
  for (size_t j = 0; j < out.size(); ++j) {
    if (n[j] > 0) out[j] = sum[j] / n[j];
  }
  return out;
}

}  // namespace cohort::insight
