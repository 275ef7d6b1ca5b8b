// LogBuffer: the in-memory batch behind Run::Log. Log() interns keys (a key seen in the same
// position of the previous call costs one string compare, no hashing), appends (key id, value)
// cells and step rows to vectors that keep their capacity, and applies the writer's step rules:
//
//   - values go to the current step; commit=true then advances the step by one;
//   - an explicit step below the current one (or negative) is ignored and counted in dropped();
//     a higher one closes the current step and becomes current;
//   - commit=false accumulates into the current step (one row while it stays in the buffer).
//
// Keys follow the one key rule (core/metric_key.h): a value whose key breaks it is dropped and
// counted in dropped() at the call, so that nothing the server would refuse is ever acknowledged.
//
// Take() moves the pending data out as a self-contained batch::Batch (its own key table) for
// the flush thread, which encodes it once (core/batch_format.h).
//
// Threading: Log/AddConsole/accessors are thread-safe and hold one mutex for a few hundred
// nanoseconds at most; Take() is for one flush thread at a time (it has its own scratch).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cohort/cohort.h"
#include "core/batch_format.h"
#include "core/limits.h"
#include "core/mutex.h"

namespace cohort::client {

class LogBuffer {
 public:
  struct Limits {
    size_t flush_cells = limits::kClientFlushCells;  // Log() asks for a flush at this many cells
    size_t flush_keys = limits::kClientFlushKeys;    // ... or distinct keys in the batch
    size_t flush_console_bytes = limits::kClientFlushConsoleBytes;
    size_t max_pending_cells = 8 << 20;  // beyond this, values are dropped (flusher stuck)
    size_t max_frame_cells = limits::kClientMaxBatchCells;  // cells per taken batch
    size_t max_frame_keys = limits::kClientMaxBatchKeys;    // distinct keys per taken batch
    size_t max_frame_console_bytes = limits::kClientMaxBatchConsoleBytes;
  };

  LogBuffer() : LogBuffer(Limits{}) {}
  explicit LogBuffer(Limits limits);

  // Returns true when the buffer is big enough that it should be flushed now.
  bool Log(const Values& values, std::optional<int64_t> step, bool commit) COHORT_EXCLUDES(mu_);
  // Values and histograms of one call (cohort.h Run::Log with histograms): kInvalidArgument
  // naming the key, and nothing logged, for an invalid histogram or key, or a key logged
  // before with the other type. *flush: whether the buffer should be flushed now.
  Status Log(const Values& values, std::span<const std::pair<std::string, Histogram>> histograms,
             std::optional<int64_t> step, bool commit, bool* flush) COHORT_EXCLUDES(mu_);
  // The same with keys interned by Intern() (no string work; unknown ids are dropped).
  bool Log(std::span<const Point> points, std::optional<int64_t> step, bool commit)
      COHORT_EXCLUDES(mu_);
  // The id of `key` for Log(span<const Point>); kInvalidKey when it breaks the key rule. Ids stay
  // valid for the buffer's life (a forked child keeps them).
  uint32_t Intern(std::string_view key) COHORT_EXCLUDES(mu_);
  static constexpr uint32_t kInvalidKey = UINT32_MAX;
  bool AddConsole(int64_t time_ms, bool is_stderr, std::string text) COHORT_EXCLUDES(mu_);
  // Claims `key` for media of `type` (a key has one type per run): kInvalidArgument naming the
  // key when it breaks the key rule or was logged with another type.
  Status ClaimMedia(std::string_view key, batch::MediaType type) COHORT_EXCLUDES(mu_);
  // Claims `key` for histograms, as ClaimMedia does for media.
  Status ClaimHistogram(std::string_view key) COHORT_EXCLUDES(mu_);
  // Appends one histogram under `key` at `step` (>= 0, below the current step too; claimed as
  // above). kInvalidArgument naming the key for an invalid histogram; kResourceExhausted (counted
  // in dropped()) when the histograms waiting for the agent are past what the buffer may hold.
  // *flush: whether the buffer should be flushed now.
  Status LogHistogramAt(std::string_view key, int64_t step, const Histogram& histogram, bool* flush)
      COHORT_EXCLUDES(mu_);
  // Appends one step's media set under `key` (claimed as above; rows' key and index are set
  // here). kInvalidArgument naming the key and row for an invalid row, nothing appended.
  // *flush: whether the buffer should be flushed now.
  Status LogMedia(std::string_view key, batch::MediaType type, int64_t step,
                  std::vector<batch::MediaRow> rows, bool* flush) COHORT_EXCLUDES(mu_);

  // Moves pending data (at most limits.max_frame_cells cells, max_frame_keys keys and
  // max_frame_console_bytes of console text) into `out` (cleared first). False when nothing is
  // pending.
  bool Take(batch::Batch* out) COHORT_EXCLUDES(take_mu_, mu_);

  // Raises the current step to `step` (a re-joined writer continues where it was).
  void AdvanceStepTo(int64_t step) COHORT_EXCLUDES(mu_);
  int64_t step() const COHORT_EXCLUDES(mu_);
  int64_t dropped() const COHORT_EXCLUDES(mu_);
  bool empty() const COHORT_EXCLUDES(mu_);
  size_t pending_cells() const COHORT_EXCLUDES(mu_);

  // fork() support: the prepare handler locks, the parent and child handlers unlock; the child,
  // before it unlocks, drops the parent's pending data and restarts its step count (it is a new
  // writer). fork_take_mu() and fork_mu() name the two locks in the fork handlers' annotations.
  void LockForFork() COHORT_ACQUIRE(take_mu_, mu_);
  void UnlockAfterFork() COHORT_RELEASE(mu_, take_mu_);
  void ResetInChild() COHORT_REQUIRES(mu_);
  Mutex& fork_take_mu() COHORT_RETURN_CAPABILITY(take_mu_) { return take_mu_; }
  Mutex& fork_mu() COHORT_RETURN_CAPABILITY(mu_) { return mu_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  };
  // Steps rules shared by both Log()s: false when the call is dropped (step in the past).
  bool BeginCallLocked(std::optional<int64_t> step, size_t count) COHORT_REQUIRES(mu_);
  // The end of a call BeginCallLocked refused; whether to flush.
  bool DroppedCallLocked(bool commit) COHORT_REQUIRES(mu_);
  bool EndCallLocked(bool commit) COHORT_REQUIRES(mu_);
  bool LogValuesLocked(const Values& values, std::optional<int64_t> step, bool commit)
      COHORT_REQUIRES(mu_);
  // Claims `key` for the key type `want` (kHistogram, kMediaBase + type) and sets *id.
  Status ClaimTypeLocked(std::string_view key, uint8_t want, uint32_t* id) COHORT_REQUIRES(mu_);
  Status ClaimMediaLocked(std::string_view key, batch::MediaType type, uint32_t* id)
      COHORT_REQUIRES(mu_);
  // Media and histograms taken into `out` (after its cells and their keys) while the batch's
  // distinct keys stay within limits_.max_frame_keys (the server refuses a batch of more).
  void TakeMediaLocked(batch::Batch* out) COHORT_REQUIRES(take_mu_, mu_);
  // Whether key `id` is in `out`'s key table or was added to it (false: the table is full).
  bool AddBatchKeyLocked(uint32_t id, batch::Batch* out) COHORT_REQUIRES(take_mu_, mu_);
  Status CheckTypesLocked(const Values& values,
                          std::span<const std::pair<std::string, Histogram>> histograms)
      COHORT_REQUIRES(mu_);
  void TakeHistogramsLocked(batch::Batch* out) COHORT_REQUIRES(take_mu_, mu_);
  // How many of the first row's cells fit one frame (the row alone is over its limits).
  // `*distinct_keys`: how many distinct keys those cells have.
  size_t TakeFirstCellsLocked(size_t* distinct_keys) COHORT_REQUIRES(mu_);
  uint32_t InternLocked(std::string_view key) COHORT_REQUIRES(mu_);
  void MarkKeyLocked(uint32_t id) COHORT_REQUIRES(mu_);
  void RecountKeysLocked() COHORT_REQUIRES(mu_);
  void TakeConsoleLocked(batch::Batch* out) COHORT_REQUIRES(mu_);

  const Limits limits_;
  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(take_mu_);
  // Keys, by id.
  std::vector<std::string> keys_ COHORT_GUARDED_BY(mu_);
  std::unordered_map<std::string, uint32_t, Hash, Eq> ids_ COHORT_GUARDED_BY(mu_);
  // Ids of the previous call's keys, by position.
  std::vector<uint32_t> last_call_ids_ COHORT_GUARDED_BY(mu_);
  // Keys in the previous call (SIZE_MAX: unusable).
  size_t last_call_size_ COHORT_GUARDED_BY(mu_) = SIZE_MAX;
  // Batch generation its keys were counted in.
  uint32_t last_call_generation_ COHORT_GUARDED_BY(mu_) = 0;
  // Pending data, keys as global ids.
  std::vector<batch::Batch::Cell> cells_ COHORT_GUARDED_BY(mu_);
  std::vector<batch::Batch::Row> rows_ COHORT_GUARDED_BY(mu_);
  std::vector<batch::Batch::Line> console_ COHORT_GUARDED_BY(mu_);
  // Pending histograms (key: global id) and their size (limits::HistogramWords).
  std::vector<batch::Batch::HistogramRow> hists_ COHORT_GUARDED_BY(mu_);
  size_t hist_words_ COHORT_GUARDED_BY(mu_) = 0;
  // Pending media rows (key: global id).
  std::vector<batch::MediaRow> media_ COHORT_GUARDED_BY(mu_);
  // Per key id: the type it was logged with (a key has one type per run); media types are
  // kMediaBase + batch::MediaType.
  enum KeyType : uint8_t { kUntyped = 0, kScalar = 1, kHistogram = 2, kMediaBase = 16 };
  std::vector<uint8_t> key_type_ COHORT_GUARDED_BY(mu_);
  // Some key has a type other than scalar (a histogram or media key).
  bool has_histogram_keys_ COHORT_GUARDED_BY(mu_) = false;
  size_t console_bytes_ COHORT_GUARDED_BY(mu_) = 0;
  // Distinct keys of the pending data; key_mark_: id -> batch generation that last used it.
  std::vector<uint32_t> key_mark_ COHORT_GUARDED_BY(mu_);
  std::vector<uint32_t> batch_keys_ COHORT_GUARDED_BY(mu_);
  uint32_t batch_generation_ COHORT_GUARDED_BY(mu_) = 1;
  // Steps.
  int64_t step_ COHORT_GUARDED_BY(mu_) = 0;
  // rows_.back() is the uncommitted row of step_.
  bool row_open_ COHORT_GUARDED_BY(mu_) = false;
  bool full_ COHORT_GUARDED_BY(mu_) = false;  // the last BeginCallLocked found the buffer full
  int64_t dropped_ COHORT_GUARDED_BY(mu_) = 0;

  // Take() scratch (flush thread).
  Mutex take_mu_;
  // Global id -> local id + 1 (0: not in this batch).
  std::vector<uint32_t> local_of_ COHORT_GUARDED_BY(take_mu_);
};

}  // namespace cohort::client
