// Fuzz target: the JSON layer of ingest, on arbitrary request bodies.
//  - core/json.h json::Parse: never crashes (deep nesting is an error, not a stack overflow);
//    a value it accepts serializes to text that parses back to an equal value.
//  - server/api/ingest_decode.h DecodeIngestBatch: an error is a 400 or 413 status with a
//    message; a decoded batch respects every limit it was given (small limits here, so that the
//    fuzzer reaches them);
//  - the streaming fast path (ingest_fast_decode.h) either declines or yields exactly what the
//    tree decoder yields (bit for bit), and never accepts what the tree decoder rejects.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>

#include "core/json.h"
#include "fuzz_check.h"
#include "server/api/ingest_decode.h"
#include "server/api/ingest_fast_decode.h"

namespace {

using cohort::StatusCode;

void CheckJsonRoundTrip(std::string_view text) {
  auto parsed = cohort::json::Parse(text, {.max_depth = 32});
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument, "%s",
               parsed.status().ToString().c_str());
    FUZZ_CHECK(!parsed.status().message().empty(), "an error names the problem");
    return;
  }
  std::string again = cohort::json::Serialize(*parsed);
  auto reparsed = cohort::json::Parse(again, {.max_depth = 32});
  FUZZ_CHECK(reparsed.ok(), "serialized JSON does not parse back: %s (%s)", again.c_str(),
             reparsed.status().ToString().c_str());
  FUZZ_CHECK(*reparsed == *parsed, "round trip changed the value: %s", again.c_str());
}

bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool SameValues(const std::vector<std::pair<std::string, double>>& a,
                const std::vector<std::pair<std::string, double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !SameDouble(a[i].second, b[i].second)) return false;
  }
  return true;
}

void CheckFastPathAgrees(std::string_view body, const cohort::api::ApiLimits& limits) {
  auto fast = cohort::api::FastDecodeIngestBatch(body, limits);
  if (!fast) return;
  auto tree = cohort::api::DecodeIngestBatchWithTree(body, limits);
  FUZZ_CHECK(tree.ok(), "the fast path accepted what the tree decoder rejects: %s",
             tree.status().ToString().c_str());
  const auto& a = *fast;
  const auto& b = *tree;
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
  std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckJsonRoundTrip(body);

  cohort::api::ApiLimits limits;
  limits.max_keys_per_batch = 8;
  limits.max_key_bytes = 16;
  limits.max_console_line_bytes = 64;
  limits.max_rows_per_batch = 32;
  CheckFastPathAgrees(body, limits);
  cohort::api::ApiLimits defaults;
  CheckFastPathAgrees(body, defaults);
  auto batch = cohort::api::DecodeIngestBatch(body, limits);
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
    for (const auto& [key, value] : values) {
      FUZZ_CHECK(!key.empty() && key.size() <= limits.max_key_bytes, "key '%s'", key.c_str());
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
  return 0;
}
