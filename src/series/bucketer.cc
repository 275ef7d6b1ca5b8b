#include "series/bucketer.h"

#include <algorithm>
#include <limits>

#include "core/coding.h"
#include "series/value_bits.h"

namespace cohort::series {

Bucketer::Bucketer(int64_t lo, int64_t hi, int n) : lo_(lo), hi_(std::max(lo, hi)) {
  // ceil((span + 1) / n) == span / n + 1, which only overflows for n == 1 over the full range.
  const uint64_t span = uint64_t(hi_) - uint64_t(lo_);
  if (n <= 1) {
    width_ = 0;
    acc_.resize(1);
    return;
  }
  width_ = span / uint64_t(n) + 1;
  acc_.resize(size_t(span / width_ + 1));
}

size_t Bucketer::Index(int64_t step) const {
  return width_ == 0 ? 0 : size_t((uint64_t(step) - uint64_t(lo_)) / width_);
}

bool Bucketer::FitsOneBucket(const ChunkSummary& s) const {
  if (s.count == 0) return true;
  if (s.min_step < lo_ || s.max_step > hi_) return false;
  return Index(s.min_step) == Index(s.max_step);
}

void Bucketer::AddSummary(const ChunkSummary& s) {
  if (s.count == 0 || s.min_step < lo_ || s.min_step > hi_) return;
  acc_[Index(s.min_step)].Merge(s);
}

void Bucketer::AddPoint(const Point& p) {
  if (p.step < lo_ || p.step > hi_) return;
  acc_[Index(p.step)].Add(p.step, p.time_ms, p.value);
}

void Bucketer::AddPoints(const Point* points, size_t n, int64_t min_time, int64_t max_time) {
  if (min_time == std::numeric_limits<int64_t>::min() &&
      max_time == std::numeric_limits<int64_t>::max()) {
    AddPointsIn<false>(points, n, min_time, max_time);  // no time filter: a simpler loop
  } else {
    AddPointsIn<true>(points, n, min_time, max_time);
  }
}

template <bool kTimeFilter>
void Bucketer::AddPointsIn(const Point* points, size_t n, int64_t min_time, int64_t max_time) {
  auto wanted = [&](const Point& p) {
    return (!kTimeFilter || (p.time_ms >= min_time && p.time_ms <= max_time)) && p.step >= lo_ &&
           p.step <= hi_;
  };
  size_t i = 0;
  while (i < n) {
    if (!wanted(points[i])) {
      ++i;
      continue;
    }
    // Fold the run of points that stay in this bucket into local variables, then into the
    // bucket: the same result as AddPoint on each (the sum is added in the same order).
    const size_t b = Index(points[i].step);
    int64_t bucket_lo = lo_, bucket_hi = hi_;
    if (width_ != 0) {
      const uint64_t first = uint64_t(lo_) + uint64_t(b) * width_;
      bucket_lo = int64_t(first);
      bucket_hi = uint64_t(hi_) - first < width_ - 1 ? hi_ : int64_t(first + (width_ - 1));
    }
    ChunkSummary& acc = acc_[b];
    const Point& p0 = points[i];
    int64_t count = 0, nans = 0;
    int64_t min_step = p0.step, max_step = p0.step, min_t = p0.time_ms, max_t = p0.time_ms;
    int64_t min_key = std::numeric_limits<int64_t>::max();  // order-preserving value patterns
    int64_t max_key = std::numeric_limits<int64_t>::min();
    double first = p0.value, last = p0.value, sum = acc.sum;
    for (; i < n; ++i) {
      const Point& p = points[i];
      if (p.step < bucket_lo || p.step > bucket_hi) break;
      if (kTimeFilter && (p.time_ms < min_time || p.time_ms > max_time)) continue;
      const uint64_t bits = coding::DoubleBits(p.value);
      const bool nan = internal::IsNan(bits);
      const int64_t key = internal::Ordered64(bits);
      if (p.step < min_step) {
        min_step = p.step;
        first = p.value;
      }
      if (p.step >= max_step) {
        max_step = p.step;
        last = p.value;
      }
      min_t = std::min(min_t, p.time_ms);
      max_t = std::max(max_t, p.time_ms);
      ++count;
      nans += nan;
      min_key = std::min(min_key, nan ? std::numeric_limits<int64_t>::max() : key);
      max_key = std::max(max_key, nan ? std::numeric_limits<int64_t>::min() : key);
      sum += nan ? 0.0 : p.value;  // sums start at +0.0, so adding +0.0 changes nothing
    }
    ChunkSummary run;
    run.count = count;
    run.nan_count = nans;
    run.min_step = min_step;
    run.max_step = max_step;
    run.min_time = min_t;
    run.max_time = max_t;
    if (count > nans) {
      run.min = coding::BitsDouble(internal::FromOrdered64(min_key));
      run.max = coding::BitsDouble(internal::FromOrdered64(max_key));
    }
    run.first = first;
    run.last = last;
    acc.Merge(run);
    acc.sum = sum;
  }
}

std::vector<Bucket> Bucketer::Finish() const {
  std::vector<Bucket> out;
  for (const ChunkSummary& s : acc_) {
    if (s.count == 0) continue;
    Bucket b;
    b.step_min = s.min_step;
    b.step_max = s.max_step;
    b.time_min = s.min_time;
    b.time_max = s.max_time;
    b.count = s.count;
    b.nan_count = s.nan_count;
    b.min = s.min;
    b.max = s.max;
    b.sum = s.sum;
    b.first = s.first;
    b.last = s.last;
    out.push_back(b);
  }
  return out;
}

}  // namespace cohort::series
