// Decoding of a JSON ingest batch body (docs/api.md, "Ingest"), the public route for people and
// other languages: one streaming pass (a SAX handler, no JSON tree) straight into the columnar
// batch (store/ingest_batch.h), the same one the binary decoder (ingest_binary_decode.h) yields
// for the same data (histogram and media rows included), within the same limits (ApiLimits),
// checked once here; the histogram and media rows go through the same checks as the binary
// decoder's (ingest_checks.h). Every error names the offending field
// ("history[3].values.loss: expected a number"); limits are kPayloadTooLarge (413), everything
// else kInvalidArgument (400). Pure; thread-safe.
#pragma once

#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::api {

Result<store::IngestBatch> DecodeIngestBatch(std::string_view body,
                                                       const ApiLimits& limits);

}  // namespace cohort::api
