// The fast path of ingest decoding (ingest_decode.h): a streaming parse of an ingest batch body
// straight into an IngestBatch, without building a JSON tree. It accepts only the common,
// well-formed shape (integer seq/step/time, numeric or "NaN"/"Infinity" values, distinct keys,
// no nulls or unknown fields, within the limits) and then yields exactly what
// DecodeIngestBatch's tree decoder would; for anything else it returns nullopt and the caller
// decodes with the tree decoder, which names the problem. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::api {

std::optional<store::IngestBatch> FastDecodeIngestBatch(std::string_view body,
                                                        const ApiLimits& limits);

}  // namespace cohort::api
