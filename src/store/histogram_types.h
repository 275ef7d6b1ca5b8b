// The histogram values of a run and the query over them (DataStore::ListHistograms,
// QueryHistograms; GET .../{run}/histograms, docs/api.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/histogram.h"
#include "store/run_types.h"

namespace cohort::store {

struct HistogramQuery {
  RunRef run;
  std::vector<std::string> keys;     // empty: every histogram key
  std::vector<std::string> writers;  // labels; empty: all
  int64_t min_step = 0;
  int64_t max_step = INT64_MAX;
  // > 0: when a (key, writer) has more than this many steps in the range, neighbouring steps
  // are merged into this many buckets (core/histogram.h Merge); 0: every step.
  int buckets = 0;
  // The most bin counts and edges the query may read, all its steps together (0: no bound): past
  // it the query stops with kPayloadTooLarge instead of holding the rest in memory (steps are
  // read whole before they are merged into buckets).
  int64_t max_values = 0;
};

// One step, or one bucket of merged steps, of one (key, writer).
struct HistogramStep {
  int64_t step = 0;  // the bucket's first step
  int64_t last_step = 0;
  int64_t time_ms = 0;  // of the bucket's last step
  int64_t merged = 1;   // steps in the bucket
  bool exact = true;    // false: steps with different bins, re-binned (approximate)
  Histogram value;
};

struct HistogramSeries {
  std::string key, writer;
  int64_t count = 0;  // steps in the range
  std::vector<HistogramStep> steps;
};

}  // namespace cohort::store
