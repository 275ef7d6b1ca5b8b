// What one writer sends in one request, as a Store ingests it (Store::Ingest). Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
