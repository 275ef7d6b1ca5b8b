// Run references shared by every Store backend: validation and the not-found errors, so that
// all backends word them the same way (the conformance suite checks the messages name the run).
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "cohort/status.h"
#include "store/run_types.h"

namespace cohort::store {

std::string RunName(const RunRef& ref);  // "entity/project/run_id"
Status RunNotFound(const RunRef& ref);
Status WriterNotFound(const RunRef& ref, const std::string& label);
// InvalidArgument unless entity and project are set and the id is valid (or empty, when
// `allow_empty_id`: the store then makes one).
Status ValidateRunRef(const RunRef& ref, bool allow_empty_id);

}  // namespace cohort::store
