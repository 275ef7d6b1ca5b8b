// Bucketer: folds points and whole-chunk summaries into N equal-width step buckets over an
// inclusive step range, giving exact min/max/count/first/last and the double sum per bucket.
//
// A store asks FitsOneBucket() for each chunk in range: when true it adds the chunk's summary
// (no decoding), otherwise it decodes the chunk and adds its points. Summaries and points must be
// added in arrival order (the series' chunk order) for first/last to follow ChunkSummary's rules.
// Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "series/chunk.h"
#include "series/types.h"

namespace cohort::series {

class Bucketer {
 public:
  // Buckets cover [lo, hi] (inclusive, lo <= hi) in `n` >= 1 buckets of equal integer width
  // ceil((hi - lo + 1) / n); fewer buckets when the range is shorter than n. Any int64 range
  // works, INT64_MIN..INT64_MAX included. Memory is O(number of buckets).
  Bucketer(int64_t lo, int64_t hi, int n);

  // True when every step of `s` lies in [lo, hi] and in one bucket (or `s` is empty).
  bool FitsOneBucket(const ChunkSummary& s) const;
  void AddSummary(const ChunkSummary& s);  // requires FitsOneBucket(s)
  void AddPoint(const Point& p);           // points outside [lo, hi] are ignored
  // Adds `n` points in order, skipping those outside [lo, hi] or outside [min_time, max_time].
  // Same result as AddPoint on each, faster for runs of nearby steps.
  void AddPoints(const Point* points, size_t n, int64_t min_time, int64_t max_time);
  // The non-empty buckets in step order. NaN values count in `count` but not in min/max/sum; a
  // bucket of only NaN has min = +inf and max = -inf, as in ChunkSummary.
  std::vector<Bucket> Finish() const;

  size_t bucket_count() const { return acc_.size(); }

 private:
  size_t Index(int64_t step) const;  // requires lo_ <= step <= hi_
  template <bool kTimeFilter>
  void AddPointsIn(const Point* points, size_t n, int64_t min_time, int64_t max_time);

  int64_t lo_, hi_;
  uint64_t width_;  // 0: one bucket spans the whole range (width 2^64 does not fit)
  std::vector<ChunkSummary> acc_;
};

}  // namespace cohort::series
