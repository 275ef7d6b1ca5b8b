// Fuzz target: the binary ingest batch decoder (server/api/ingest_binary_decode.h) on arbitrary
// bodies.
//  - An error is a 400 or 413 status with a message; never a crash, never a huge allocation.
//  - A decoded batch respects every limit it was given (small limits here, so that the fuzzer
//    reaches them): rows, distinct keys, key bytes, console line bytes; keys non-empty, valid
//    UTF-8, distinct within a row; console text valid UTF-8.
//  - Re-encoding the decoded batch with the agent's encoder (agent/batch_binary.h) and decoding
//    it again yields the same batch, bit for bit.
// Input: the first byte selects the mode; bit 0 set: the body's checksum (bytes 8-11) is
// recomputed before decoding, so that the fuzzer gets past it to the payload.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "agent/batch_binary.h"
#include "core/coding.h"
#include "core/crc32c.h"
#include "fuzz_check.h"
#include "ingest_batch_checks.h"
#include "server/api/ingest_binary_decode.h"

namespace {

using cohort::store::IngestBatch;

// The decoded batch as the agent holds it, for re-encoding.
cohort::agent::LogBatch ToLogBatch(const IngestBatch& batch) {
  cohort::agent::LogBatch b;
  std::unordered_map<std::string, uint32_t> index;
  auto add_row = [&](std::vector<cohort::agent::LogBatch::Row>* rows, int64_t step, int64_t time_ms,
                     const std::vector<std::pair<std::string, double>>& values) {
    cohort::agent::LogBatch::Row row;
    row.step = step;
    row.time_ms = time_ms;
    row.begin = uint32_t(b.cells.size());
    row.count = uint32_t(values.size());
    for (const auto& [key, value] : values) {
      auto [it, added] = index.emplace(key, uint32_t(b.keys.size()));
      if (added) b.keys.push_back(key);
      b.cells.push_back({it->second, value});
    }
    rows->push_back(row);
  };
  for (const auto& r : cohort::store::HistoryRowsOf(batch)) {
    add_row(&b.history, r.step, r.time_ms, r.values);
  }
  for (const auto& r : cohort::store::SystemRowsOf(batch))
    add_row(&b.system, 0, r.time_ms, r.values);
  for (const auto& l : batch.console)
    b.console.push_back({l.time_ms, l.stream == "stderr", l.text});
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((mode & 1) && body.size() >= cohort::api::kBinaryBatchHeaderBytes) {
    const uint32_t crc =
        cohort::crc32c::Value(std::string_view(body).substr(cohort::api::kBinaryBatchHeaderBytes));
    for (int k = 0; k < 4; ++k) body[8 + k] = char(crc >> (8 * k));
  }

  const cohort::api::ApiLimits limits = cohort::fuzz::SmallIngestLimits();
  auto batch = cohort::api::DecodeBinaryIngestBatch(body, limits);
  if (!batch.ok()) {
    cohort::fuzz::CheckDecodeError(batch.status());
    return 0;
  }
  cohort::fuzz::CheckBatchLimits(*batch, limits, /*keys_utf8_and_distinct=*/true);

  std::string again;
  cohort::agent::AppendBatchBinary(ToLogBatch(*batch), batch->seq, &again);
  auto redecoded = cohort::api::DecodeBinaryIngestBatch(again, limits);
  FUZZ_CHECK(redecoded.ok(), "re-encoded batch does not decode: %s",
             redecoded.status().ToString().c_str());
  cohort::fuzz::CheckSameBatch(*batch, *redecoded);
  return 0;
}
