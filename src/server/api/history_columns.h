// The columnar answer of a raw history read (docs/formats.md, "History columns"): a small JSON
// header naming each series, then per series its steps, times and values as little-endian
// int64/int64/float64 arrays that numpy.frombuffer reads without copying; CRC-32C checked.
// Chosen by `Accept` (NegotiateHistoryFormat); JSON stays the default. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "core/history_columns.h"
#include "server/http/message.h"
#include "store/history_types.h"

namespace cohort::api {

inline constexpr std::string_view kColumnsMediaType = "application/vnd.cohort.columns";
inline constexpr uint32_t kColumnsVersion = history_columns::kVersion;

enum class HistoryFormat { kJson, kColumns };

// The answer's format for an `Accept` header (empty: JSON). JSON when the caller accepts it at
// least as much as the columns (application/json, application/*, */*); the columns only when
// named (never through */*), and only for raw reads (`bucketed` false). An error (its message
// names the problem; the route answers it as 406 Not Acceptable) when nothing acceptable is
// offered: columns for a bucketed read, or no type the route has.
Result<HistoryFormat> NegotiateHistoryFormat(std::string_view accept, bool bucketed);

// The columnar body for `series` (raw reads: points and `more` of each). `warnings_json`: the
// JSON array of the answer's warnings ("[...]"), or empty for none. Read back by
// history_columns::Decode (core/history_columns.h).
std::string EncodeHistoryColumns(const std::vector<store::SeriesData>& series,
                                 std::string_view warnings_json);

// The two ends of every columnar answer (this one and run_list_columns.h): BeginColumns writes
// the preamble (magic, version, header length, a checksum to come) and `header` zero-padded to
// a multiple of 8; the arrays are appended after it; SealColumns sets the CRC-32C of every byte
// after the preamble.
std::string BeginColumns(std::string_view header, size_t reserve_arrays = 0);
void SealColumns(std::string* out);

// A 200 answer whose body is a sealed columnar document: its content type with the format's
// version, and `Vary: Accept` (the route answers JSON too).
http::HttpResponse ColumnsResponse(std::string body);

}  // namespace cohort::api
