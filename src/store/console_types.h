// Console lines as a Store keeps them and the queries of a run's console. Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/run_types.h"

namespace cohort::store {

struct ConsoleLine {
  int64_t time_ms = 0;
  std::string stream = "stdout";  // "stdout" | "stderr"
  std::string text;
  std::string label;  // filled by the store on reads: the writer's label
  int64_t id = 0;     // filled by the store on reads: a cursor for paging
  // >= 0: the line's position in its writer's console (the W&B output.log offset, see
  // src/server/compat); a line stored before at the same position of the same writer is
  // replaced in place (progress bars re-send lines). -1: the line is appended.
  int64_t line = -1;
};

struct ConsoleQuery {
  RunRef run;
  std::vector<std::string> labels;  // empty: all
  std::string stream;               // empty: both
  std::string text;                 // substring, case-sensitive; empty: all
  int64_t after_id = 0;             // paging cursor
  int limit = 1000;
};

// Paging cursors of a console filter (Store::IndexConsole): how many lines match after the
// query's after_id, the id of every `stride`-th matching line (the 1-based stride-th, 2*stride-th,
// ...), and the id of the last matching line (the query's after_id when none matches).
struct ConsoleIndex {
  int64_t total = 0;
  std::vector<int64_t> stride_ids;
  int64_t last_id = 0;
};

}  // namespace cohort::store
