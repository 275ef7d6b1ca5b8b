// The columnar ingest batch: the one in-memory form of what a writer sends in one request, from
// the decoders (binary, JSON, W&B compat) to both stores. Keys are a table of columns (one per
// distinct key of a section), each holding the rows that carry the key and the value in each;
// steps and times are arrays indexed by row. No string per cell: a store reads a column as one
// series' points (store/ingest_plan.h).
//
// Threading: plain values; IngestBatchBuilder belongs to one thread at a time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cohort/histogram.h"
#include "core/limits.h"
#include "store/console_types.h"

namespace cohort::store {

inline constexpr int64_t kAssignStep = -1;  // history_step value: the writer's next step

// The type of a key in a run (one per key): scalar keys "scalar", histogram keys "histogram",
// media keys their media type ("image", "table", ...).
inline constexpr const char* kScalarKeyType = "scalar";
inline constexpr const char* kHistogramKeyType = "histogram";

// The prefix of every system metric key as stored ("system/gpu.0.temp"), core/limits.h.
using limits::kSystemKeyPrefix;

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

// One key of one batch section, as a column: the rows of the section that carry the key and the
// value in each. Rows are strictly ascending (a key appears at most once per row).
struct KeyColumn {
  std::string key;      // as stored: user keys as logged; system keys WITH "system/"
  bool system = false;  // rows index system_time_ms; else history_step/history_time_ms
  std::vector<uint32_t> rows;
  std::vector<double> values;  // same length as rows; any double (NaN, inf, -0.0 kept)
};

// One histogram value of a batch (a history value of type histogram, docs/formats.md): at an
// explicit step, valid (core/histogram.h). A key has one type in a run: a batch that logs a key
// as a histogram that the run has as a scalar (or the reverse) is refused whole.
struct HistogramPoint {
  std::string key;
  int64_t step = 0;
  int64_t time_ms = 0;
  Histogram value;
};

// One media value of a batch (docs/formats.md "Media"): a row naming a blob by SHA-256, at an
// explicit step. Types are batch::MediaType's names ("image", "audio", "video", "html",
// "table"); a key has one type in a run (scalar, histogram or one media type). One row per
// (key, step, index) is kept: a row logged again at the same place replaces the stored one.
struct MediaPoint {
  std::string key;
  int64_t step = 0;
  int64_t time_ms = 0;
  int64_t index = 0;
  std::string type;
  std::string sha256;
  int64_t size = 0;
  std::string mime;
  int64_t width = 0;   // tables: columns
  int64_t height = 0;  // tables: rows
  int64_t duration_ms = 0;
  std::string caption;
  // Tables: the bytes of the blobs their media cells name (batch::MediaRow::cell_bytes); they
  // count against the run's media budget with `size`.
  int64_t cell_bytes = 0;
  // A file of the vendor's clients that a history line names by path only (a list of images:
  // docs/compat.md): sha256 and size are empty until the file's upload names its blob
  // (Store::AttachUploadedMedia). Never set by the batch decoders.
  std::string path;
  // A vendor table's `artifact_path` (wandb-client-artifact://<client ID>/<entry>): the entry
  // of the run_table artifact that holds its cells with their media (docs/compat.md). Never
  // set by the batch decoders.
  std::string artifact_ref;
};

// Everything one writer sends in one request, applied atomically and at most once per seq.
struct IngestBatch {
  int64_t seq = 0;  // > 0, unique per writer; a seen seq is acknowledged and ignored. 0 only
                    // together with `positions`, which then guard the batch instead.
  // Not empty: the sender's stream (limits::kBatchOrderedHeader; needs seq > 0), which sends its
  // batches in seq order, each once every lower seq of the stream is settled. The store keeps the
  // stream's highest stored seq per writer (ordered_streams) instead of a record per batch; a
  // seq of the stream at or below it is a duplicate. Empty: a record per (writer, seq), pruned
  // by retention.
  std::string ordered_stream;
  std::vector<StreamPosition> positions;  // checked and advanced atomically with the batch
  std::vector<int64_t> history_step;      // per history row; kAssignStep or >= 0
  std::vector<int64_t> history_time_ms;   // per history row
  std::vector<int64_t> system_time_ms;    // per system row
  std::vector<KeyColumn> columns;         // distinct (key) over the batch; system keys are
                                          // distinct from user keys by their prefix
  std::vector<ConsoleLine> console;
  std::vector<HistogramPoint> histograms;  // in any order; one per (key, step) is kept: the last
  std::vector<MediaPoint> media;           // in any order; one per (key, step, index): the last
  // > 0: limits on the batch's media, from the server's flags (0: none): the bytes of one media
  // file, rows per (key, step), and the bytes of all the run's media rows, tables' cells
  // included. A row past the first two, and the batch's rows when the run would pass the third,
  // are refused; the rest of the batch is stored (IngestResult::media_refused).
  int64_t max_media_file_bytes = 0;
  int64_t max_media_per_step = 0;
  int64_t max_run_media_bytes = 0;
  // > 0: the run may hold at most this many distinct keys (history, system, histogram and media
  // keys, all writers); a
  // batch that would take it past them is refused whole with kPayloadTooLarge. Set by the
  // server from the entity's tier (src/server/limits); 0: no limit.
  int64_t max_run_keys = 0;

  size_t history_rows() const { return history_step.size(); }
  size_t system_rows() const { return system_time_ms.size(); }
  int64_t points() const;                           // sum of column sizes
  std::vector<std::string> histogram_keys() const;  // distinct, sorted
  std::vector<std::string> media_keys() const;      // distinct, sorted
};

struct IngestResult {
  bool duplicate = false;  // the seq had been stored before; nothing changed
  int64_t points = 0;      // scalar points stored (history + system)
  int64_t next_step = 0;   // the writer's next step after this batch
  // Media rows not stored because they were past IngestBatch's media limits (the rest of the
  // batch is stored): how many, and why (the first).
  int64_t media_refused = 0;
  std::string media_refused_reason;
};

// Builds a batch row by row (compat, the JSON decoders, tests, benchmarks): interns keys to
// columns as it goes. Rows usually repeat the previous row's keys in the same order, so a key is
// first compared with the one at the same position of the previous row of its section and only
// looked up on a miss. A key given twice in one row keeps its last value.
class IngestBatchBuilder {
 public:
  using Cell = std::pair<std::string_view, double>;

  explicit IngestBatchBuilder(int64_t seq = 0) { batch_.seq = seq; }

  // A history row at `step` (kAssignStep: the writer's next) and time.
  void AddHistoryRow(int64_t step, int64_t time_ms, std::span<const Cell> cells);
  void AddHistoryRow(int64_t step, int64_t time_ms, std::initializer_list<Cell> cells) {
    AddHistoryRow(step, time_ms, std::span<const Cell>(cells.begin(), cells.size()));
  }
  // A system sample; keys WITHOUT the "system/" prefix ("gpu.0.temp"): the builder adds it.
  void AddSystemRow(int64_t time_ms, std::span<const Cell> cells);
  void AddSystemRow(int64_t time_ms, std::initializer_list<Cell> cells) {
    AddSystemRow(time_ms, std::span<const Cell>(cells.begin(), cells.size()));
  }
  void AddConsole(ConsoleLine line) { batch_.console.push_back(std::move(line)); }
  void AddHistogram(HistogramPoint h) { batch_.histograms.push_back(std::move(h)); }
  void AddMedia(MediaPoint m) { batch_.media.push_back(std::move(m)); }

  IngestBatch& batch() { return batch_; }  // seq, positions, max_run_keys may be set here
  IngestBatch Finish() { return std::move(batch_); }

 private:
  struct Section {
    bool system = false;
    std::unordered_map<std::string, uint32_t> index;  // key as given -> column
    std::vector<uint32_t> previous;                   // columns of the previous row, in order
  };
  void AddRow(Section* section, uint32_t row, std::span<const Cell> cells);
  uint32_t Column(Section* section, std::string_view key, size_t position);

  IngestBatch batch_;
  Section history_{false, {}, {}};
  Section system_{true, {}, {}};
  std::string scratch_;
};

}  // namespace cohort::store
