// Fuzz target: the binary ingest batch decoder (server/api/ingest_binary_decode.h) on arbitrary
// bodies.
//  - An error is a 400 or 413 status with a message; never a crash, never a huge allocation.
//  - A decoded batch respects every limit it was given (small limits here, so that the fuzzer
//    reaches them) and the key rule: rows, distinct keys, key bytes, console line bytes; keys
//    distinct within a row (a column's rows ascend); console text valid UTF-8.
//  - Re-encoding the decoded batch with the client library's encoder (core/batch_format.h) and
//    decoding it again yields the same batch, bit for bit.
// Input: the first byte selects the mode; bit 0 set: the body's checksum (bytes 8-11) is
// recomputed before decoding, so that the fuzzer gets past it to the payload.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/batch_format.h"
#include "core/crc32c.h"
#include "fuzz_check.h"
#include "ingest_batch_checks.h"
#include "server/api/ingest_binary_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((mode & 1) && body.size() >= cohort::batch::kHeaderBytes) {
    const uint32_t crc =
        cohort::crc32c::Value(std::string_view(body).substr(cohort::batch::kHeaderBytes));
    for (int k = 0; k < 4; ++k) body[8 + k] = char(crc >> (8 * k));
  }

  const cohort::api::ApiLimits limits = cohort::fuzz::SmallIngestLimits();
  auto batch = cohort::api::DecodeBinaryIngestBatch(body, /*seq=*/7, limits);
  if (!batch.ok()) {
    cohort::fuzz::CheckDecodeError(batch.status());
    return 0;
  }
  cohort::fuzz::CheckBatchLimits(*batch, limits);
  cohort::fuzz::CheckReencodes(*batch, limits);
  return 0;
}
