// Backend-independent checks of an ingest batch that every Store applies before writing
// (the API validates shapes and limits earlier; these guard the store's own invariants).
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/status.h"
#include "store/ingest_batch.h"

namespace cohort::store {

Status ValidateBatch(const IngestBatch& batch);

// The steps of a batch's history rows, from the writer's next step: a row without a step
// (step < 0) takes the next step, an explicit step moves the next step past it (the counter
// stays at INT64_MAX after a row at INT64_MAX). Sets (*steps)[i] for each row and returns the
// writer's new next step. kInvalidArgument naming the row ("history[i].step") when a row without
// a step finds the counter at INT64_MAX: the counter never wraps to a negative step.
Result<int64_t> AssignSteps(const std::vector<HistoryRow>& rows, int64_t next_step,
                            std::vector<int64_t>* steps);

}  // namespace cohort::store
