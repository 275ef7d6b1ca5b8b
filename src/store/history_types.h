// The series of a run and the history queries over them (Store::ListSeries, QueryHistory): a
// run, keys and writers around the series codec's own query and answer (series/types.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
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
  // The most points and buckets the answer may hold, all its series together (0: no bound):
  // past it the query stops with kPayloadTooLarge instead of building the rest in memory.
  int64_t max_answer_points = 0;
  // What the answer holds already, from earlier queries of it (the other runs of a read of
  // several runs).
  int64_t answer_points_held = 0;
};

// Adds `d`'s points and buckets to `*held` (which starts at q.answer_points_held);
// kPayloadTooLarge naming the bound once they pass q.max_answer_points.
inline Status ChargeHistoryAnswer(const HistoryQuery& q, const series::SeriesResult& d,
                                  int64_t* held) {
  *held += int64_t(d.points.size() + d.buckets.size());
  if (q.max_answer_points <= 0 || *held <= q.max_answer_points) return Status::Ok();
  return Status::PayloadTooLarge(
      "history: the answer would hold more than " + std::to_string(q.max_answer_points) +
      " points and buckets (--max-answer-points): name fewer keys or writers (or runs), narrow "
      "the step or time range, lower limit, or ask for fewer buckets");
}

// One series of a history query's answer: its key and writer, and what was read of it.
struct SeriesData : series::SeriesResult {
  std::string key, writer;
};

}  // namespace cohort::store
