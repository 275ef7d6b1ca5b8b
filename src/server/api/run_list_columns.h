// The columnar answer of a runs listing (docs/formats.md, "Run list columns"): the same
// preamble, media type and version as the history columns (history_columns.h), a JSON header
// naming the columns with their types, then per column its presence bytes and its values as
// little-endian arrays that numpy.frombuffer reads without copying. The columns are the ones
// `cohort.Api().runs(...).to_dataframe()` has always built from the JSON answer: the run's own
// fields, then config and summary flattened with '.' (nested objects; an empty one is kept as
// {}), in name order. Chosen by `Accept` on GET /api/v1/runs/{entity}/{project}. Pure function.
#pragma once

#include <cstdint>
#include <string>

#include "core/json.h"

namespace cohort::api {

// `runs`: the listing's run objects (RunToJson); `total` and `next_cursor` as in the JSON answer
// (empty cursor: the last page).
std::string EncodeRunListColumns(const json::bj::array& runs, int64_t total,
                                 const std::string& next_cursor);

}  // namespace cohort::api
