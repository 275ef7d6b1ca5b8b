// Turns a LogBatch into the binary body of POST .../writers/{label}/batches (Content-Type
// application/vnd.cohort.batch; format in docs/formats.md, "Binary ingest batch"): the server
// decodes it without parsing text, about half the bytes of the JSON body.
//
// Same guarantees as the JSON encoder (batch_json.h): nothing the server must refuse for its
// content. Keys and console text are made valid UTF-8 (U+FFFD), cells whose key is empty or
// longer than kMaxKeyBytes are left out (counted), a key repeated within one row keeps its last
// value, console lines are cut to kMaxConsoleLineBytes, a history row with a negative step is
// sent without one (the server assigns it). Values are sent as their exact IEEE-754 bits
// (non-finite values included). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/batch_json.h"
#include "agent/protocol.h"

namespace cohort::agent {

inline constexpr std::string_view kBinaryBatchContentType = "application/vnd.cohort.batch";
// What GET /healthz lists in "ingest_formats" when the server reads this encoding.
inline constexpr std::string_view kBinaryBatchFormatName = "cohort-batch-v1";

// Appends the binary batch (header with CRC-32C included) to `out`.
BatchJsonStats AppendBatchBinary(const LogBatch& batch, int64_t seq, std::string* out);

// The same straight from an encoded LogBatch (a WAL batch record, protocol.h), in one pass and
// without building the LogBatch, for the common case: every key valid, distinct, 1..256 bytes,
// no key twice in a row, console text valid UTF-8 within the limit. Then it appends exactly what
// AppendBatchBinary(DecodeLogBatch(record)) would and returns true; otherwise (or when the record
// is malformed) it appends nothing and returns false, and the caller takes the general path.
bool TranscodeLogBatchBinary(std::string_view record, int64_t seq, std::string* out,
                             BatchJsonStats* stats);

}  // namespace cohort::agent
