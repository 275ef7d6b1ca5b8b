// The layout of the history columns (docs/formats.md "History columns"), the binary answer of
// raw history and system-metric reads: a 16-byte preamble (magic "CHCL", version, header length,
// CRC-32C of everything after the preamble), a JSON header naming each series, padded to 8
// bytes, then per series its steps, times and values as little-endian int64/int64/float64
// arrays. The server writes it (server/api/history_columns.h); this is the one C++ reader (the
// CLI's reads and the server's tests; Python's is python/cohort/api_columns.py). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::history_columns {

inline constexpr std::string_view kMagic = "CHCL";
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kPreamble = 16;  // magic, version, header length, crc32c

// One series of a body: its points as three columns of equal length.
struct ColumnSeries {
  std::string key, writer;
  bool more = false;  // the series has points after the last one here
  std::vector<int64_t> steps, times;
  std::vector<double> values;
};

struct Decoded {
  std::string header_json;  // the header, as sent (its "warnings" included)
  std::vector<ColumnSeries> series;
};

// kCorruption naming the problem for a wrong magic, version, checksum or length, or a header
// that does not describe the columns that follow.
Result<Decoded> Decode(std::string_view body);

}  // namespace cohort::history_columns
