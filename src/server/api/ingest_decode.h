// Decoding and validation of an ingest batch body (docs/api.md, "Ingest"): a streaming fast path
// (ingest_fast_decode.h) for well-formed batches, else a JSON tree decoder. Every error names
// the offending field ("history[3].values.loss: expected a number"). Pure; thread-safe.
#pragma once

#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::api {

Result<store::IngestBatch> DecodeIngestBatch(std::string_view body, const ApiLimits& limits);

// The tree decoder alone (what DecodeIngestBatch falls back to); for tests that compare the two.
Result<store::IngestBatch> DecodeIngestBatchWithTree(std::string_view body,
                                                     const ApiLimits& limits);

}  // namespace cohort::api
