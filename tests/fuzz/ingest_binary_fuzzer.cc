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
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "agent/batch_binary.h"
#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"
#include "fuzz_check.h"
#include "server/api/ingest_binary_decode.h"

namespace {

using cohort::StatusCode;
using cohort::store::IngestBatch;

bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool SameValues(const std::vector<std::pair<std::string, double>>& a,
                const std::vector<std::pair<std::string, double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !SameDouble(a[i].second, b[i].second)) return false;
  }
  return true;
}

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
  for (const auto& r : batch.rows) add_row(&b.history, r.step, r.time_ms, r.values);
  for (const auto& r : batch.system) add_row(&b.system, 0, r.time_ms, r.values);
  for (const auto& l : batch.console)
    b.console.push_back({l.time_ms, l.stream == "stderr", l.text});
  return b;
}

void CheckSame(const IngestBatch& a, const IngestBatch& b) {
  FUZZ_CHECK(a.seq == b.seq, "seq %lld vs %lld", static_cast<long long>(a.seq),
             static_cast<long long>(b.seq));
  FUZZ_CHECK(a.rows.size() == b.rows.size() && a.system.size() == b.system.size() &&
                 a.console.size() == b.console.size(),
             "row counts differ");
  for (size_t i = 0; i < a.rows.size(); ++i) {
    FUZZ_CHECK(a.rows[i].step == b.rows[i].step && a.rows[i].time_ms == b.rows[i].time_ms &&
                   SameValues(a.rows[i].values, b.rows[i].values),
               "history[%zu] differs", i);
  }
  for (size_t i = 0; i < a.system.size(); ++i) {
    FUZZ_CHECK(a.system[i].time_ms == b.system[i].time_ms &&
                   SameValues(a.system[i].values, b.system[i].values),
               "system[%zu] differs", i);
  }
  for (size_t i = 0; i < a.console.size(); ++i) {
    FUZZ_CHECK(a.console[i].time_ms == b.console[i].time_ms &&
                   a.console[i].stream == b.console[i].stream &&
                   a.console[i].text == b.console[i].text,
               "console[%zu] differs", i);
  }
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

  cohort::api::ApiLimits limits;
  limits.max_keys_per_batch = 8;
  limits.max_key_bytes = 16;
  limits.max_console_line_bytes = 64;
  limits.max_rows_per_batch = 32;
  auto batch = cohort::api::DecodeBinaryIngestBatch(body, limits);
  if (!batch.ok()) {
    StatusCode code = batch.status().code();
    FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge, "%s",
               batch.status().ToString().c_str());
    FUZZ_CHECK(!batch.status().message().empty(), "an error names the problem");
    return 0;
  }
  FUZZ_CHECK(batch->seq > 0, "seq %lld", static_cast<long long>(batch->seq));
  FUZZ_CHECK(batch->rows.size() + batch->system.size() + batch->console.size() <=
                 limits.max_rows_per_batch,
             "too many rows");
  std::unordered_set<std::string> keys;
  auto check_values = [&](const std::vector<std::pair<std::string, double>>& values) {
    std::unordered_set<std::string> in_row;
    for (const auto& [key, value] : values) {
      FUZZ_CHECK(!key.empty() && key.size() <= limits.max_key_bytes, "key '%s'", key.c_str());
      FUZZ_CHECK(cohort::json::IsValidUtf8(key), "key is not UTF-8");
      FUZZ_CHECK(in_row.insert(key).second, "key '%s' twice in a row", key.c_str());
      keys.insert(key);
    }
  };
  for (const auto& row : batch->rows) {
    FUZZ_CHECK(row.step >= -1, "step %lld", static_cast<long long>(row.step));
    check_values(row.values);
  }
  for (const auto& row : batch->system) check_values(row.values);
  FUZZ_CHECK(keys.size() <= limits.max_keys_per_batch, "%zu distinct keys", keys.size());
  for (const auto& line : batch->console) {
    FUZZ_CHECK(line.stream == "stdout" || line.stream == "stderr", "stream '%s'",
               line.stream.c_str());
    FUZZ_CHECK(line.text.size() <= limits.max_console_line_bytes, "line of %zu bytes",
               line.text.size());
    FUZZ_CHECK(cohort::json::IsValidUtf8(line.text), "console text is not UTF-8");
  }

  std::string again;
  cohort::agent::AppendBatchBinary(ToLogBatch(*batch), batch->seq, &again);
  auto redecoded = cohort::api::DecodeBinaryIngestBatch(again, limits);
  FUZZ_CHECK(redecoded.ok(), "re-encoded batch does not decode: %s",
             redecoded.status().ToString().c_str());
  CheckSame(*batch, *redecoded);
  return 0;
}
