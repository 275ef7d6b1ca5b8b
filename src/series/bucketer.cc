#include "series/bucketer.h"

#include <algorithm>

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

void Bucketer::AddPoint(const store::Point& p) {
  if (p.step < lo_ || p.step > hi_) return;
  acc_[Index(p.step)].Add(p.step, p.time_ms, p.value);
}

void Bucketer::AddPoints(const store::Point* points, size_t n, int64_t min_time,
                         int64_t max_time) {
  // The bucket of the previous point and its step bounds, to skip the division for neighbours.
  ChunkSummary* cur = nullptr;
  int64_t cur_lo = 1, cur_hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const store::Point& p = points[i];
    if (p.time_ms < min_time || p.time_ms > max_time) continue;
    if (p.step < cur_lo || p.step > cur_hi) {
      if (p.step < lo_ || p.step > hi_) continue;
      const size_t b = Index(p.step);
      cur = &acc_[b];
      if (width_ == 0) {
        cur_lo = lo_;
        cur_hi = hi_;
      } else {
        const uint64_t first = uint64_t(lo_) + uint64_t(b) * width_;
        cur_lo = int64_t(first);
        // The last bucket may be cut short by hi_.
        cur_hi = uint64_t(hi_) - first < width_ - 1 ? hi_ : int64_t(first + (width_ - 1));
      }
    }
    cur->Add(p.step, p.time_ms, p.value);
  }
}

std::vector<store::Bucket> Bucketer::Finish() const {
  std::vector<store::Bucket> out;
  for (const ChunkSummary& s : acc_) {
    if (s.count == 0) continue;
    store::Bucket b;
    b.step_min = s.min_step;
    b.step_max = s.max_step;
    b.time_min = s.min_time;
    b.time_max = s.max_time;
    b.count = s.count;
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
