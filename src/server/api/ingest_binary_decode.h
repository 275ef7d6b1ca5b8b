// Decoding of a binary batch body (batch v4, docs/formats.md; core/batch_format.h): what the
// agent posts to POST .../writers/{label}/batches with Content-Type
// application/vnd.cohort.batch, byte for byte the batch the client library encoded, and the
// batch's seq in the Cohort-Batch-Seq header.
//
// The result is the columnar batch (store/ingest_batch.h) that the JSON decoder
// (ingest_decode.h) yields for the same data, within the same limits (ApiLimits), checked once
// here: one column per key of the key table and section, filled straight from the rows. Every
// error names the problem and where it is ("history[3]: key index 12 out of range (11 keys)");
// limits are kPayloadTooLarge (413), everything else kInvalidArgument (400). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::api {

// The batch's seq from the Cohort-Batch-Seq header's value: a decimal integer in 1..2^63-1.
// kInvalidArgument naming the header otherwise (also when it is absent: an empty value).
Result<int64_t> ParseBatchSeqHeader(std::string_view value);

// The Cohort-Batch-Ordered header's value (limits::kBatchOrderedHeader): the sender's stream id,
// an id by ids::IsValidId's rule (surrounding blanks dropped); empty when the header is absent or
// empty (an unordered batch); kInvalidArgument naming the header otherwise.
Result<std::string> ParseBatchOrderedHeader(std::string_view value);

Result<store::IngestBatch> DecodeBinaryIngestBatch(std::string_view body, int64_t seq,
                                                             const ApiLimits& limits);

// True when `content_type` (a Content-Type header value, parameters allowed) names the binary
// batch format.
bool IsBinaryBatchContentType(std::string_view content_type);

}  // namespace cohort::api
