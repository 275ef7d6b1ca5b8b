// The checks that the ingest fuzz targets (ingest_fuzzer.cc: JSON bodies, ingest_binary_fuzzer.cc:
// binary bodies) make of what a batch decoder returns: an error is a 400 or 413 with a message,
// a decoded batch keeps the limits it was decoded under, and two decodings of one batch are the
// same bit for bit. Each check that fails aborts (fuzz_check.h). Header-only; pure functions.
#pragma once

#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/json.h"
#include "fuzz_check.h"
#include "server/api/context.h"
#include "store/ingest_batch.h"

namespace cohort::fuzz {

// The small limits the targets decode under, so that the fuzzer reaches them.
inline api::ApiLimits SmallIngestLimits() {
  api::ApiLimits limits;
  limits.max_keys_per_batch = 8;
  limits.max_key_bytes = 16;
  limits.max_console_line_bytes = 64;
  limits.max_rows_per_batch = 32;
  return limits;
}

inline bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline bool SameValues(const std::vector<std::pair<std::string, double>>& a,
                       const std::vector<std::pair<std::string, double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !SameDouble(a[i].second, b[i].second)) return false;
  }
  return true;
}

// `a` and `b` hold the same seq, rows, system rows and console lines, values bit for bit.
inline void CheckSameBatch(const store::IngestBatch& a, const store::IngestBatch& b) {
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

// A decoder's error: 400 (kInvalidArgument) or 413 (kPayloadTooLarge), with a message.
inline void CheckDecodeError(const Status& status) {
  StatusCode code = status.code();
  FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge, "%s",
             status.ToString().c_str());
  FUZZ_CHECK(!status.message().empty(), "an error names the problem");
}

// What a batch decoded under `limits` keeps: a positive seq, at most max_rows_per_batch rows,
// steps from -1, non-empty keys of at most max_key_bytes and at most max_keys_per_batch distinct
// ones, stdout/stderr console lines of UTF-8 text of at most max_console_line_bytes. With
// `keys_utf8_and_distinct`, also keys that are UTF-8 and distinct within a row.
inline void CheckBatchLimits(const store::IngestBatch& batch, const api::ApiLimits& limits,
                             bool keys_utf8_and_distinct) {
  FUZZ_CHECK(batch.seq > 0, "seq %lld", static_cast<long long>(batch.seq));
  FUZZ_CHECK(
      batch.rows.size() + batch.system.size() + batch.console.size() <= limits.max_rows_per_batch,
      "too many rows");
  std::unordered_set<std::string> keys;
  auto check_values = [&](const std::vector<std::pair<std::string, double>>& values) {
    std::unordered_set<std::string> in_row;
    for (const auto& [key, value] : values) {
      FUZZ_CHECK(!key.empty() && key.size() <= limits.max_key_bytes, "key '%s'", key.c_str());
      if (keys_utf8_and_distinct) {
        FUZZ_CHECK(json::IsValidUtf8(key), "key is not UTF-8");
        FUZZ_CHECK(in_row.insert(key).second, "key '%s' twice in a row", key.c_str());
      }
      keys.insert(key);
    }
  };
  for (const auto& row : batch.rows) {
    FUZZ_CHECK(row.step >= -1, "step %lld", static_cast<long long>(row.step));
    check_values(row.values);
  }
  for (const auto& row : batch.system) check_values(row.values);
  FUZZ_CHECK(keys.size() <= limits.max_keys_per_batch, "%zu distinct keys", keys.size());
  for (const auto& line : batch.console) {
    FUZZ_CHECK(line.stream == "stdout" || line.stream == "stderr", "stream '%s'",
               line.stream.c_str());
    FUZZ_CHECK(line.text.size() <= limits.max_console_line_bytes, "line of %zu bytes",
               line.text.size());
    FUZZ_CHECK(json::IsValidUtf8(line.text), "console text is not UTF-8");
  }
}

}  // namespace cohort::fuzz
