// The ingest planner both stores use (store/ingest_batch.h -> series): what the store checks of a
// batch beyond what the decoders can know, the steps of its rows, its columns in key order as
// series points, and the run's key budget. The engines do only their own part: reading and
// locking the writer's rows and writing chunks (sqlite_ingest.cc, pg_ingest.cc).
//
// Threading: an IngestPlan belongs to one thread at a time; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "store/ingest_batch.h"
#include "store/history_types.h"
#include "store/run_types.h"

namespace cohort::store {

// The store's rules of a batch, checked before anything is written: seq (> 0, or 0 with stream
// positions), stream positions (named, non-negative, each stream once), history steps
// (kAssignStep or >= 0) and times per row, keys (non-empty, no NUL character, user keys without
// and system keys with the "system/" prefix, each once), columns (as many values as rows, rows
// strictly ascending within their section) and console streams (stdout, stderr).
// kInvalidArgument naming the problem.
Status ValidateBatch(const IngestBatch& batch);

// One validated batch as series: columns in key order (the order in which both stores create,
// lock and charge series), each column's points once the writer's next step is known.
class IngestPlan {
 public:
  // Validates `batch` (ValidateBatch), which must outlive the plan and not change.
  static Result<IngestPlan> Make(const IngestBatch& batch);

  const IngestBatch& batch() const { return *batch_; }
  // Indexes into batch().columns, ordered by key.
  const std::vector<uint32_t>& by_key() const { return by_key_; }

  // Gives history rows without a step the writer's next steps in order; an explicit step at or
  // past the next step moves it past (the counter stays at INT64_MAX after a row at INT64_MAX).
  // May be called again (a retried transaction that read another next step). Returns the
  // writer's next step after the batch; kInvalidArgument naming the row ("history[i].step")
  // when a row without a step finds the counter at INT64_MAX: it never wraps to a negative step.
  Result<int64_t> AssignSteps(int64_t next_step);

  // The points of column `c`: history rows at their assigned steps (AssignSteps first), system
  // rows indexed by time (step = time in ms).
  void Points(uint32_t c, std::vector<series::Point>* out) const;
  // The lowest and highest step of column `c`'s points (AssignSteps first).
  std::pair<int64_t, int64_t> StepRange(uint32_t c) const;

 private:
  explicit IngestPlan(const IngestBatch& batch) : batch_(&batch) {}
  const IngestBatch* batch_;
  std::vector<uint32_t> by_key_;
  std::vector<int64_t> steps_;  // per history row, after AssignSteps
};

// The key budget (IngestBatch::max_run_keys), one rule for both stores: a batch that creates
// series may add keys the run has under no writer yet; it is refused whole when the run would
// then hold more than `max` distinct keys. `run_keys`: the run's distinct keys before the batch;
// `added`: how many of the batch's new series' keys the run does not have; `first_new`: one of
// those keys, for the message. kPayloadTooLarge naming the run, the counts and the limit.
Status CheckKeyBudget(const RunRef& ref, int64_t run_keys, int64_t added,
                      const std::string& first_new, int64_t max);

}  // namespace cohort::store
