#include "series/aggregate.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace cohort::series {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

int64_t RoundUp(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

// One member's contribution to one bucket.
struct Entry {
  int member;
  double sum;
  int64_t n;  // non-NaN points
};

struct Acc {
  int64_t count = 0, n = 0;
  int64_t step_min = 0, step_max = 0, time_min = 0, time_max = 0;
  double sum = 0;
  double min = 0, max = 0;
  int min_member = -1, max_member = -1;
  std::vector<Entry> entries;
};

}  // namespace

int64_t AggregateGrid::Slot(int64_t step) const { return FloorDiv(step, width) - first; }

Result<AggregateGrid> ChooseAggregateGrid(int64_t lo, int64_t hi, int n, int chunk_points) {
  if (n < 1) return Status::InvalidArgument("buckets: expected at least 1");
  if (chunk_points < 1) return Status::InvalidArgument("chunk_points: expected at least 1");
  if (lo > hi) return Status::InvalidArgument("min_step: greater than max_step");
  if (lo < -kMaxAggregateStep || hi > kMaxAggregateStep) {
    return Status::InvalidArgument("steps beyond +-2^61 cannot be aggregated");
  }
  const int64_t range = hi - lo + 1;
  int64_t w = (range + n - 1) / n;
  int64_t unit = 1;
  if (w > chunk_points / 2) {
    unit = chunk_points;
    w = RoundUp(w, unit);
  }
  // Aligned buckets split at zero: a range with negative and positive steps needs two.
  const int64_t max_count = (n == 1 && lo < 0 && hi >= 0) ? 2 : n;
  while (FloorDiv(hi, w) - FloorDiv(lo, w) + 1 > max_count) {
    w += std::max(unit, RoundUp(w / 8, unit));
    if (unit == 1 && w > chunk_points / 2) {
      unit = chunk_points;
      w = RoundUp(w, unit);
    }
  }
  AggregateGrid g;
  g.width = w;
  g.first = FloorDiv(lo, w);
  g.count = FloorDiv(hi, w) - g.first + 1;
  g.clip_lo = lo;
  g.clip_hi = hi;
  return g;
}

std::vector<GridPart> GridParts(const AggregateGrid& g) {
  std::vector<GridPart> parts;
  if (g.count <= 0) return parts;
  const int64_t first_end = g.lo() + g.width - 1;  // last step of the first bucket
  if (g.count == 1) {
    parts.push_back({g.clip_lo, g.clip_hi, 1});
    return parts;
  }
  const int64_t last_start = g.hi() - g.width + 1;
  // A whole first bucket starts the run of whole buckets; a partial one is a part of its own.
  int64_t start = g.lo(), n = g.count;
  if (g.clip_lo != g.lo()) {
    parts.push_back({g.clip_lo, first_end, 1});
    start = first_end + 1;
    --n;
  }
  // The last bucket joins the run when the Bucketer's width over the run is still the grid's.
  const int64_t len = g.clip_hi - start + 1;
  if ((len + n - 1) / n == g.width) {
    parts.push_back({start, g.clip_hi, int(n)});
    return parts;
  }
  if (n > 1) parts.push_back({start, last_start - 1, int(n - 1)});
  parts.push_back({last_start, g.clip_hi, 1});
  return parts;
}

double MedianOf(std::vector<double>* v) {
  if (v->empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + ptrdiff_t(mid), v->end());
  const double upper = (*v)[mid];
  if (v->size() % 2 == 1) return upper;
  const double lower = *std::max_element(v->begin(), v->begin() + ptrdiff_t(mid));
  return lower + (upper - lower) / 2;
}

std::vector<AggregateBucket> AggregateMembers(const AggregateGrid& grid,
                                              const std::vector<std::vector<Bucket>>& members,
                                              bool per_member) {
  std::vector<Acc> acc(size_t(std::max<int64_t>(grid.count, 0)));
  for (size_t m = 0; m < members.size(); ++m) {
    for (const Bucket& b : members[m]) {
      if (b.count <= 0) continue;
      const int64_t slot = grid.Slot(b.step_min);
      if (slot < 0 || slot >= grid.count) continue;  // outside the grid: not ours to place
      Acc& a = acc[size_t(slot)];
      if (a.count == 0) {
        a.step_min = b.step_min;
        a.step_max = b.step_max;
        a.time_min = b.time_min;
        a.time_max = b.time_max;
      } else {
        a.step_min = std::min(a.step_min, b.step_min);
        a.step_max = std::max(a.step_max, b.step_max);
        a.time_min = std::min(a.time_min, b.time_min);
        a.time_max = std::max(a.time_max, b.time_max);
      }
      a.count += b.count;
      const int64_t valid = b.count - b.nan_count;
      if (valid <= 0) continue;
      a.n += valid;
      a.sum += b.sum;
      if (a.min_member < 0 || b.min < a.min) {
        a.min = b.min;
        a.min_member = int(m);
      }
      if (a.max_member < 0 || b.max > a.max) {
        a.max = b.max;
        a.max_member = int(m);
      }
      if (!a.entries.empty() && a.entries.back().member == int(m)) {
        a.entries.back().sum += b.sum;
        a.entries.back().n += valid;
      } else {
        a.entries.push_back(Entry{int(m), b.sum, valid});
      }
    }
  }

  std::vector<AggregateBucket> out;
  std::vector<double> means, devs;
  for (size_t slot = 0; slot < acc.size(); ++slot) {
    const Acc& a = acc[slot];
    if (a.count == 0) continue;
    AggregateBucket r;
    r.slot = int64_t(slot);
    r.step_min = a.step_min;
    r.step_max = a.step_max;
    r.time_min = a.time_min;
    r.time_max = a.time_max;
    r.count = a.count;
    r.members = int64_t(a.entries.size());
    if (per_member) r.values.assign(members.size(), std::numeric_limits<double>::quiet_NaN());
    if (r.members > 0) {
      r.min = a.min;
      r.max = a.max;
      r.min_member = a.min_member;
      r.max_member = a.max_member;
      r.spread = a.max - a.min;
      r.mean = a.sum / double(a.n);
      means.clear();
      for (const Entry& e : a.entries) {
        const double mean = e.sum / double(e.n);
        means.push_back(mean);
        if (per_member) r.values[size_t(e.member)] = mean;
      }
      r.median = MedianOf(&means);
      if (r.members >= 3 && std::isfinite(r.median)) {
        devs.clear();
        for (const Entry& e : a.entries) devs.push_back(std::fabs(e.sum / double(e.n) - r.median));
        const double mad = MedianOf(&devs);
        const double scale = std::max({1.4826 * mad, 0.01 * std::fabs(r.median), 1e-12});
        double best = -1;
        for (const Entry& e : a.entries) {
          const double d = e.sum / double(e.n) - r.median;
          if (std::isfinite(d) && std::fabs(d) > best) {
            best = std::fabs(d);
            r.outlier_member = e.member;
            r.outlier_z = d / scale;
          }
        }
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace cohort::series
