// Decoding and validation of an ingest batch body (docs/api.md, "Ingest"). Every error names
// the offending field ("history[3].values.loss: expected a number"). Pure; thread-safe.
#pragma once

#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "store/types.h"

namespace cohort::api {

Result<store::IngestBatch> DecodeIngestBatch(std::string_view body, const ApiLimits& limits);

}  // namespace cohort::api
