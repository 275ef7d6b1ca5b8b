// Cross-series aggregation: one metric logged by many members (the writers of a shared run, or
// the runs of a group) combined per step bucket into min/max/mean/median/spread, the members that
// hold the extremes, and the member farthest from the median (docs/api.md, "Rank aggregation").
//
// Every member is first bucketed on one common, aligned grid (AggregateGrid) by the ordinary
// history query (QuerySeries: chunk summaries, decoding only chunks that straddle a bucket edge);
// AggregateMembers then folds the per-member buckets. Nothing here reads points.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "cohort/status.h"
#include "series/types.h"

namespace cohort::series {

// Steps beyond +-kMaxAggregateStep cannot be aggregated (the aligned grid must not overflow).
inline constexpr int64_t kMaxAggregateStep = int64_t(1) << 61;

// A grid of `count` buckets of `width` steps aligned to multiples of the width: bucket k (k from
// `first`) holds steps [k * width, (k + 1) * width - 1], clipped to [clip_lo, clip_hi] (so the
// first and the last bucket may be partial).
struct AggregateGrid {
  int64_t width = 1;
  int64_t first = 0;
  int64_t count = 0;
  int64_t clip_lo = 0, clip_hi = 0;

  int64_t lo() const { return first * width; }                // unclipped
  int64_t hi() const { return (first + count) * width - 1; }  // unclipped
  // Bucket number of a step (floor division), relative to `first`.
  int64_t Slot(int64_t step) const;
};

// A step range and bucket count for one bucketed history query (SeriesQuery::min_step,
// max_step, buckets) whose Bucketer buckets coincide with grid buckets.
struct GridPart {
  int64_t min_step = 0, max_step = 0;
  int buckets = 1;
};

// The (at most 3) queries that bucket a series on `grid` clipped: a partial first bucket, the
// whole buckets, a partial last bucket; as few as the Bucketer's equal widths allow (one for a
// range from a multiple of the width whose last bucket is not much shorter than the others).
std::vector<GridPart> GridParts(const AggregateGrid& grid);

// The grid for steps [lo, hi] in at most `n` buckets (n >= 1, lo <= hi, both within
// +-kMaxAggregateStep): width = ceil((hi - lo + 1) / n), rounded up to a multiple of
// `chunk_points` when above chunk_points / 2 (so that chunks of consecutive steps starting at a
// multiple of chunk_points fit one bucket and need no decoding), then grown until the aligned
// buckets covering [lo, hi] are at most n (2 when n is 1 and lo < 0 <= hi); clipped to [lo, hi].
// kInvalidArgument otherwise.
Result<AggregateGrid> ChooseAggregateGrid(int64_t lo, int64_t hi, int n, int chunk_points);

// One bucket of the aggregate. Member indices refer to the caller's member list; -1: none.
struct AggregateBucket {
  int64_t slot = 0;  // bucket number relative to the grid's first
  int64_t step_min = 0, step_max = 0, time_min = 0, time_max = 0;  // of the points in it
  int64_t count = 0;                                      // points of every member, NaN included
  int64_t members = 0;                                    // members with at least one non-NaN point
  double min = std::numeric_limits<double>::quiet_NaN();  // NaN when members == 0
  double max = std::numeric_limits<double>::quiet_NaN();
  double mean = std::numeric_limits<double>::quiet_NaN();    // of every non-NaN point
  double median = std::numeric_limits<double>::quiet_NaN();  // of the member means
  double spread = std::numeric_limits<double>::quiet_NaN();  // max - min
  int min_member = -1, max_member = -1;
  int outlier_member = -1;     // farthest member mean from the median; needs >= 3 members
  double outlier_z = 0;        // its robust z-score (signed)
  std::vector<double> values;  // per_member: each member's mean here, NaN where it has none
};

// Folds per-member buckets into aggregate buckets. `members[m]` holds member m's buckets as the
// bucketed history queries of GridParts(grid) return them (each bucket inside one grid bucket;
// order free). Returns the non-empty buckets in
// step order. Ties for min/max go to the lowest member index.
std::vector<AggregateBucket> AggregateMembers(const AggregateGrid& grid,
                                              const std::vector<std::vector<Bucket>>& members,
                                              bool per_member);

// Median of `v` (mean of the two middle values for an even size); NaN for an empty vector.
// Reorders `v`.
double MedianOf(std::vector<double>* v);

}  // namespace cohort::series
