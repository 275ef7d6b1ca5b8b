// The media cells of a table document (docs/formats.md "Tables"): a table's cell may stand for a
// media value whose bytes are a blob of their own ({"_type": "image", "sha256", "size", "mime",
// "width", "height", "duration_ms", "caption"}). Read by the table routes (a cell's bytes are
// served through its table) and by `cohort gc` (a cell's blob is referenced by its table).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch_format.h"
#include "core/json.h"

namespace cohort::batch {

// The media row a table cell stands for, checked as a media row is (InvalidMediaReason);
// nullopt for any other cell: a number, a string, null, another object, a table.
std::optional<MediaRow> MediaCellOf(const json::bj::value& cell);

// The digests of the media cells of a table document ({"columns": [...], "data": [[...]]}),
// each once, in first-seen order; kInvalidArgument when `doc` is not such a document.
Result<std::vector<std::string>> MediaCellDigests(std::string_view doc);

}  // namespace cohort::batch
