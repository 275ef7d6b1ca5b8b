// The terminal commands' raw history reads: one page of `GET .../{run}/history` asked for in the
// history columns (docs/formats.md "History columns": binary arrays, no JSON number parsing, NaN
// payloads kept bit for bit), read as the JSON answer when a server answers JSON (one without
// the columns). Decoded by core/history_columns.h, the one C++ reader; `runs export` uses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/read_client.h"
#include "cohort/status.h"
#include "core/history_columns.h"

namespace cohort::cli {

using HistorySeries = history_columns::ColumnSeries;

// A JSON history answer ({"series": [{"key", "writer", "points": [[step, time, value]...],
// "more"}]}) -> its series; kInternal when it is not that shape.
Result<std::vector<HistorySeries>> ParseHistoryJson(const boost::json::value& answer);

// GET `path` (a run's /history) with `query`, accepting the columns first.
Result<std::vector<HistorySeries>> FetchHistory(ReadClient& client, std::string_view path,
                                                const Query& query);

}  // namespace cohort::cli
