// Decoding of the binary ingest batch body (docs/formats.md, "Binary ingest batch"): what the
// agent sends to POST .../writers/{label}/batches with Content-Type
// application/vnd.cohort.batch. Versioned, CRC-32C checksummed, a key table once per batch and
// rows that carry key indices (or repeat the previous row's keys) and raw IEEE-754 doubles.
//
// The result is the same store::IngestBatch that the JSON decoders (ingest_decode.h) yield for
// the same data, within the same limits (ApiLimits: rows, distinct keys, key bytes, console
// line bytes). Every error names the problem and where it is ("history[3]: key index 12 out of
// range (11 keys)"); limits are kPayloadTooLarge (413), everything else kInvalidArgument (400).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::api {

inline constexpr std::string_view kBinaryBatchContentType = "application/vnd.cohort.batch";
inline constexpr std::string_view kBinaryBatchMagic = "CBAT";
inline constexpr uint8_t kBinaryBatchVersion = 1;
inline constexpr size_t kBinaryBatchHeaderBytes = 12;  // magic, version, flags, reserved, crc

// The format version a body announces (its 5th byte), or nullopt when it does not start with
// the magic. The route answers 415 for a version it does not read.
std::optional<uint8_t> BinaryBatchVersion(std::string_view body);

Result<store::IngestBatch> DecodeBinaryIngestBatch(std::string_view body, const ApiLimits& limits);

// True when `content_type` (a Content-Type header value, parameters allowed) names the binary
// batch format.
bool IsBinaryBatchContentType(std::string_view content_type);

}  // namespace cohort::api
