// The changes that UpsertRun (resuming a run), PatchRun and a writer's end make to a run
// record, the same in every Store backend; the backend stores the record it gets back. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "cohort/status.h"
#include "store/run_types.h"

namespace cohort::store {

// Resuming an existing run: sets the fields the upsert names, merges its config into the run's
// and replaces the metadata with `metadata` (the upsert's, already checked to be an object).
// InvalidArgument when the config is not a JSON object; `run` is then partly updated.
Status ApplyRunUpsert(const RunUpsert& upsert, const std::string& metadata, RunRecord* run);

// Sets the fields the patch names and merges its config and summary into the run's.
// InvalidArgument when either is not a JSON object; `run` is then partly updated.
Status ApplyRunPatch(const RunPatch& patch, RunRecord* run);

// Derives the run's state from its writers (run_state.h) and sets it: a run that is not
// terminal has no exit code or end time; one that a controlling writer ended takes its exit code
// and end time.
void RederiveRunState(const std::vector<WriterRecord>& writers, RunRecord* run);

}  // namespace cohort::store
