// Backend-independent checks of an ingest batch that every Store applies before writing
// (the API validates shapes and limits earlier; these guard the store's own invariants).
// Pure function; thread-safe.
#pragma once

#include "cohort/status.h"
#include "store/ingest_batch.h"

namespace cohort::store {

Status ValidateBatch(const IngestBatch& batch);

}  // namespace cohort::store
