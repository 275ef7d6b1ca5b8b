// Tests only: a columnar batch (store/ingest_batch.h) read back as rows, for tests that compare
// what two decoders made of one body or look at one row. Header-only; pure.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/ingest_batch.h"

namespace cohort::store {

struct RowForTest {
  int64_t step = kAssignStep;  // history rows
  int64_t time_ms = 0;
  // In column order; system keys without their "system/" prefix.
  std::vector<std::pair<std::string, double>> values;
};

inline std::vector<RowForTest> RowsOf(const IngestBatch& batch, bool system) {
  std::vector<RowForTest> rows(system ? batch.system_rows() : batch.history_rows());
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].time_ms = system ? batch.system_time_ms[r] : batch.history_time_ms[r];
    if (!system) rows[r].step = batch.history_step[r];
  }
  for (const KeyColumn& c : batch.columns) {
    if (c.system != system) continue;
    const std::string key = system ? c.key.substr(kSystemKeyPrefix.size()) : c.key;
    for (size_t i = 0; i < c.rows.size(); ++i)
      rows[c.rows[i]].values.emplace_back(key, c.values[i]);
  }
  return rows;
}

inline std::vector<RowForTest> HistoryRowsOf(const IngestBatch& batch) {
  return RowsOf(batch, false);
}
inline std::vector<RowForTest> SystemRowsOf(const IngestBatch& batch) {
  return RowsOf(batch, true);
}

}  // namespace cohort::store
