// What one writer sends in one request, as a Store ingests it (Store::Ingest). Plain values.
//
// Below it, the columnar batch (issue 23's contract between work packages): the one in-memory
// form of ingested data between the decoders (binary, JSON, W&B compat) and the stores. Key
// table, per-key columns, step and time arrays; no string per cell.
// TEMPORARY in branch h23a: package B's store brings it into namespace cohort::store, where the
// row batch above still holds the name IngestBatch in this branch; until B lands, the same
// contract lives in cohort::store::columnar, header-only, and the ingest route converts it to
// the rows in one adapter (server/api/ingest_api.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/limits.h"
#include "store/console_types.h"

namespace cohort::store {

// One logged row: several keys at one step and time.
struct HistoryRow {
  int64_t step = -1;  // -1: server assigns the writer's next step
  int64_t time_ms = 0;
  std::vector<std::pair<std::string, double>> values;
};

// One system-monitor sample: keys without the "system/" prefix ("gpu.0.temp", "cpu").
struct SystemRow {
  int64_t time_ms = 0;
  std::vector<std::pair<std::string, double>> values;
};

// A position in one of a writer's ordered input streams, for clients that number their lines
// rather than their batches (the W&B file_stream offsets, src/server/compat). A batch carrying
// positions is stored only when every named stream's stored next offset equals `expect` (a
// stream never written counts as 0); each stream then moves to `next`. Otherwise Ingest fails
// with kFailedPrecondition and stores nothing, so a batch rebuilt from re-sent (file, offset)
// ranges is stored exactly once even when two requests race.
struct StreamPosition {
  std::string stream;
  int64_t expect = 0;
  int64_t next = 0;
};

// Everything one writer sends in one request, applied atomically and at most once per seq.
struct IngestBatch {
  int64_t seq = 0;  // > 0, unique per writer; a seen seq is acknowledged and ignored. 0 only
                    // together with `positions`, which then guard the batch instead.
  std::vector<StreamPosition> positions;  // checked and advanced atomically with the batch
  std::vector<HistoryRow> rows;
  std::vector<SystemRow> system;
  std::vector<ConsoleLine> console;
  // > 0: the run may hold at most this many distinct keys (history and system, all writers); a
  // batch that would take it past them is refused whole with kPayloadTooLarge. Set by the
  // server from the entity's tier (src/server/limits); 0: no limit.
  int64_t max_run_keys = 0;
};

struct IngestResult {
  bool duplicate = false;  // the seq had been stored before; nothing changed
  int64_t points = 0;      // scalar points stored (history + system)
  int64_t next_step = 0;   // the writer's next step after this batch
};

}  // namespace cohort::store

namespace cohort::store::columnar {

inline constexpr int64_t kAssignStep = -1;  // history_step value: the writer's next step

// One key of one batch section, as a column: the rows of the section that carry the key and the
// value in each. Rows are strictly ascending (a key appears at most once per row).
struct KeyColumn {
  std::string key;              // as stored: user keys as logged; system keys WITH "system/"
  bool system = false;          // rows index system_time_ms; else history_step/history_time_ms
  std::vector<uint32_t> rows;
  std::vector<double> values;   // same length as rows; any double (NaN, inf, -0.0 kept)
};

// Everything one writer sends in one request, applied atomically and at most once per seq.
struct IngestBatch {
  int64_t seq = 0;                          // as today (0 only with positions)
  std::vector<StreamPosition> positions;    // as today (W&B compat)
  std::vector<int64_t> history_step;        // per history row; kAssignStep or >= 0
  std::vector<int64_t> history_time_ms;     // per history row
  std::vector<int64_t> system_time_ms;      // per system row
  std::vector<KeyColumn> columns;           // distinct (key) over the batch; system keys are
                                            // distinct from user keys by their prefix
  std::vector<ConsoleLine> console;         // as today (line >= 0: compat's numbered lines)
  int64_t max_run_keys = 0;                 // as today (set by the server from the tier)

  size_t history_rows() const { return history_step.size(); }
  size_t system_rows() const { return system_time_ms.size(); }
  int64_t points() const {  // sum of column sizes
    int64_t n = 0;
    for (const KeyColumn& c : columns) n += int64_t(c.values.size());
    return n;
  }
};

// Builds a batch row by row (compat, tests, benchmarks): interns keys to columns as it goes.
// A key given twice in one row keeps its last value.
class IngestBatchBuilder {
 public:
  using Values = std::span<const std::pair<std::string_view, double>>;

  explicit IngestBatchBuilder(int64_t seq = 0) { batch_.seq = seq; }

  void AddHistoryRow(int64_t step, int64_t time_ms, Values values) {
    const uint32_t row = uint32_t(batch_.history_step.size());
    batch_.history_step.push_back(step);
    batch_.history_time_ms.push_back(time_ms);
    for (const auto& [key, value] : values) Put(history_, std::string(key), false, row, value);
  }
  // Keys WITHOUT the "system/" prefix: it adds it.
  void AddSystemRow(int64_t time_ms, Values values) {
    const uint32_t row = uint32_t(batch_.system_time_ms.size());
    batch_.system_time_ms.push_back(time_ms);
    for (const auto& [key, value] : values) {
      std::string full(limits::kSystemKeyPrefix);
      full.append(key);
      Put(system_, std::move(full), true, row, value);
    }
  }
  void AddConsole(ConsoleLine line) { batch_.console.push_back(std::move(line)); }
  IngestBatch Finish() { return std::move(batch_); }

 private:
  void Put(std::unordered_map<std::string, uint32_t>& index, std::string key, bool system,
           uint32_t row, double value) {
    auto [it, added] = index.emplace(key, uint32_t(batch_.columns.size()));
    if (added) batch_.columns.push_back(KeyColumn{std::move(key), system, {}, {}});
    KeyColumn& c = batch_.columns[it->second];
    if (!c.rows.empty() && c.rows.back() == row) {
      c.values.back() = value;
      return;
    }
    c.rows.push_back(row);
    c.values.push_back(value);
  }

  IngestBatch batch_;
  std::unordered_map<std::string, uint32_t> history_, system_;
};

}  // namespace cohort::store::columnar
