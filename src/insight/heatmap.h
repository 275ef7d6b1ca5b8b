// The ranks x time matrix of the Ranks view: equal time columns, and per member the mean step
// time or the mean of a metric in each column (docs/api.md, "Stragglers", `matrix`).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "series/types.h"

namespace cohort::insight {

// `count` columns of `bucket_ms` each from `time_min`. Any int64 range is covered without
// overflow (the arithmetic is on the unsigned distance from time_min).
struct TimeColumns {
  int64_t time_min = 0;
  uint64_t bucket_ms = 1;
  int count = 0;

  // Column of a time, or -1 outside the columns.
  int Column(int64_t t) const;
  // The first time of column j (0 <= j < count).
  int64_t Start(int j) const;
};

// Columns covering [tmin, tmax] (tmin <= tmax): at most `columns` (>= 1) of equal width >= 1 ms
// (the last millisecond of the whole int64 range asked as one column falls outside it).
TimeColumns ChooseTimeColumns(int64_t tmin, int64_t tmax, int columns);

// Mean milliseconds per step in each column (NaN where no step advanced) from a member's
// (step, time_ms) samples in step order: each pair of successive samples with a higher step
// contributes its time and step differences to the column of the later sample. Samples are a
// series' points, or the (step_min, time_min), (step_max, time_max) corners of its step buckets.
std::vector<double> StepTimeColumns(const TimeColumns& c,
                                    const std::vector<std::pair<int64_t, int64_t>>& samples);

// Corner samples of step buckets (in step order), for StepTimeColumns.
std::vector<std::pair<int64_t, int64_t>> BucketCorners(const std::vector<series::Bucket>& buckets);

// Mean value per column (NaN where none) of step buckets, each placed in the column of its
// middle time and weighted by its non-NaN points.
std::vector<double> MeanColumns(const TimeColumns& c,
                                const std::vector<std::vector<series::Bucket>>& series);

}  // namespace cohort::insight
