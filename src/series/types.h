// Value types of the series codec: points, buckets, and the parameters and answer of a query of
// one series (series/query.h). The stores, the API and insight use them as they are; nothing
// here knows runs, writers or keys. Plain values; no behaviour.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace cohort::series {

// The range of steps (and of times, in ms) a series may hold; a query without bounds reads it all.
inline constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();

// One scalar point of a series.
struct Point {
  int64_t step = 0;
  int64_t time_ms = 0;
  double value = 0;
};

// The points of one step bucket of a series, summarised.
struct Bucket {
  int64_t step_min = 0, step_max = 0;  // steps of the first and last point in the bucket
  int64_t time_min = 0, time_max = 0;
  int64_t count = 0;
  int64_t nan_count = 0;  // NaN points among `count` (not in min/max/sum)
  double min = 0, max = 0, sum = 0, first = 0, last = 0;
};

// A stored chunk that failed its checksum or could not be decoded: its points are left out of
// a query's answer, the rest of the series is served (series/query.h).
struct DamagedChunk {
  int64_t min_step = 0, max_step = 0;  // the step range its summary names
  int64_t count = 0;                   // points it held
  std::string reason;
};

// What to read of one series: a step and time range, and either buckets or a page of raw points.
struct SeriesQuery {
  std::optional<int64_t> min_step, max_step;  // inclusive
  std::optional<int64_t> min_time_ms, max_time_ms;
  int buckets = 0;                 // > 0: bucketed; 0: raw points
  int64_t limit = 100000;          // raw: points per page
  int64_t after_step = INT64_MIN;  // raw paging cursor: only steps > after_step
  // Raw mode: a step logged again (a writer re-logging a key at a step it already sent) answers
  // one point, the latest arrival, as a history row holds one value per key. False: every
  // stored point, equal steps in arrival order. (Buckets summarise every stored point.)
  bool latest_per_step = true;
};

// The answer of a SeriesQuery.
struct SeriesResult {
  std::vector<Point> points;          // raw mode, ordered by step
  std::vector<Bucket> buckets;        // bucketed mode, ordered, empty buckets omitted
  bool more = false;                  // raw mode: another page follows (cursor: last step)
  std::vector<DamagedChunk> damaged;  // chunks skipped by this answer
};

}  // namespace cohort::series
