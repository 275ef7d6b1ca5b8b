// Turns a LogBatch into the JSON body of POST .../writers/{label}/batches (docs/api.md, Ingest).
//
// The encoder never produces a body the server must reject for its content: invalid UTF-8 is
// replaced by U+FFFD, non-finite values become "NaN"/"Infinity"/"-Infinity", cells with an empty
// or over-long key are left out (counted), a key repeated within one row keeps its last value,
// and console lines longer than the server's limit are cut. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/protocol.h"

namespace cohort::agent {

inline constexpr size_t kMaxKeyBytes = 256;
inline constexpr size_t kMaxConsoleLineBytes = 64 * 1024;

struct BatchJsonStats {
  int64_t points = 0;        // values written
  int64_t dropped_keys = 0;  // cells left out for a bad key
};

// Appends {"seq": seq, "history": [...], "system": [...], "console": [...]} to `out`.
BatchJsonStats AppendBatchJson(const LogBatch& batch, int64_t seq, std::string* out);

// Appends `s` as a JSON string literal (quotes included), escaping as needed and replacing
// invalid UTF-8 with U+FFFD.
void AppendJsonString(std::string_view s, std::string* out);
// Appends a metric value: a JSON number when finite, else the non-finite string.
void AppendJsonDouble(double d, std::string* out);

// `s` with every invalid UTF-8 sequence replaced by U+FFFD, cut to at most `max_bytes` on a
// character boundary.
std::string SanitizeUtf8(std::string_view s, size_t max_bytes = SIZE_MAX);

}  // namespace cohort::agent
