// The series of a run and the history queries over them (Store::ListSeries, QueryHistory): a
// run, keys and writers around the series codec's own query and answer (series/types.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "series/types.h"
#include "store/run_types.h"

namespace cohort::store {

// Identifies one series: a key written by one writer of a run.
struct SeriesInfo {
  std::string key;     // user keys as logged; system keys carry the "system/" prefix
  std::string writer;  // label
  int64_t count = 0;
  int64_t min_step = 0, max_step = 0;
};

// The series of a run that a history query reads, and what it reads of each.
struct HistoryQuery {
  RunRef run;
  std::vector<std::string> keys;     // empty: all user keys (never system/ unless named)
  std::vector<std::string> writers;  // labels; empty: all
  series::SeriesQuery series;        // range, buckets or raw page; a page's limit is per series
};

// One series of a history query's answer: its key and writer, and what was read of it.
struct SeriesData : series::SeriesResult {
  std::string key, writer;
};

}  // namespace cohort::store
