// Translation of the vendor's file_stream lines and GraphQL JSON strings into Cohort records
// (docs/compat.md, "Mapping"):
//   - wandb-history.jsonl lines -> MetricRow (_step -> step, _timestamp -> time, scalars only,
//     nested objects flattened with '.', media objects and strings skipped);
//   - wandb-events.jsonl lines  -> MetricRow ("system.gpu.0.temp/l:rank_1" -> key "gpu.0.temp",
//     label "rank_1");
//   - output.log lines          -> ConsoleLine ("ERROR " prefix -> stderr, leading timestamp,
//     "[label] " prefix in shared mode, or the structured form {"level","ts","label","content"});
//   - config / summary JSON     -> Cohort config (unwrapped {"value": v}) and telemetry.
// The vendor's clients write non-finite floats as bare NaN / Infinity / -Infinity, which is not
// JSON; ParseLine accepts them and stores them the way Cohort's API writes them ("NaN", ...).
//
// Pure functions; thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "core/json_non_finite.h"
#include "core/limits.h"
#include "store/ingest_batch.h"

namespace cohort::compat {

namespace bj = boost::json;

// Cohort's media type of a vendor media file's "_type" ("image-file" -> "image", ...,
// "table-file" -> "table"); empty for anything else.
std::string_view VendorMediaType(std::string_view vendor_type);
// The MIME type of a vendor media file by its path's extension (the type's usual one otherwise).
std::string VendorMediaMime(std::string_view path, std::string_view type);

// True when `path` is a file below `dir` ("media/images/"): subfolders included (the vendor's
// clients make one per '/' of the logged key: "val/sample" -> media/images/val/sample_0_<id>.png),
// the part below `dir` a valid relative path (core/artifact_names.h: no empty, "." or ".."
// segments, no control characters, no backslashes), the whole at most kMaxMediaPathBytes.
bool IsMediaPathBelow(std::string_view path, std::string_view dir);

// Rewrites bare NaN / Infinity / -Infinity outside strings as "NaN", "Infinity", "-Infinity".
using json::QuoteNonFinite;  // core/json_non_finite.h

// Parses one JSON object line (bare non-finite numbers allowed).
Result<bj::object> ParseLine(std::string_view line);

// Seconds since the epoch (the vendor's _timestamp) to milliseconds; nullopt when not a finite
// number in a plausible range.
std::optional<int64_t> SecondsToMillis(const bj::value& v);
// "2024-05-01T12:00:00.123456" (UTC unless it ends in Z or an offset) to milliseconds.
std::optional<int64_t> ParseIsoMillis(std::string_view s);

struct KeyLimits {
  size_t max_key_bytes = limits::kMaxKeyBytes;
};

// The scalars of one history or system line: keys (system keys without "system/") and values.
struct MetricRow {
  int64_t step = store::kAssignStep;  // history lines: the server assigns the step when absent
  int64_t time_ms = 0;
  std::vector<std::pair<std::string, double>> values;
  // History values {"_type": "histogram", "values": [counts], "bins": [edges]} (or
  // "packedBins": {"min", "size", "count"}): stored as histograms (store/ingest_batch.h). One
  // bin whose two edges are equal (the vendor's histogram of equal values) becomes [v-0.5, v+0.5].
  std::vector<std::pair<std::string, Histogram>> histograms;
  // History values {"_type": "image-file" | "audio-file" | "video-file" | "html-file" |
  // "table-file", "path", "sha256", "size", ...}: media rows (docs/compat.md; the files come
  // through the upload route, which keeps media/ files in the blob store). Step set by the caller.
  std::vector<store::MediaPoint> media;
};

// A history line as a row. Keys that cannot be stored as scalars or histograms (strings, lists,
// media, invalid histograms) are skipped and counted in *skipped.
MetricRow HistoryRowFromLine(const bj::object& line, int64_t now_ms,
                                     const KeyLimits& limits, int64_t* skipped);

// A system-metrics line as a row of this writer; `label` is the "/l:<label>" suffix of its keys
// (empty when they have none). Keys that do not start with "system." are skipped.
struct SystemLine {
  MetricRow row;
  std::string label;
};
SystemLine SystemRowFromLine(const bj::object& line, int64_t now_ms, const KeyLimits& limits);

// One console line. `shared`: the client prefixes lines with "[label] " (shared mode), so the
// prefix is taken off and reported as the label.
struct ConsoleEntry {
  store::ConsoleLine line;
  std::string label;
};
ConsoleEntry ConsoleFromLine(std::string_view text, bool shared, int64_t now_ms);

// The vendor's run config: {"lr": {"value": 0.1, "desc": null}, "_wandb": {"value": {...}}}
// from the Python SDK, {"lr": 0.1} from the JS SDK. Returns the user config (values
// unwrapped) and the client's telemetry (the _wandb value, or null).
struct SplitConfig {
  bj::object user;
  bj::value telemetry;
};
SplitConfig SplitWandbConfig(const bj::object& config);

// Cohort config -> the vendor's form {"lr": {"value": 0.1}} (what clients read back).
bj::object ToWandbConfig(const bj::object& user);

// A summary line without the client's bookkeeping keys (_wandb, _runtime, _step, _timestamp),
// nested plain objects flattened with '.' as history lines are ({"d": {"x": 1}} -> "d.x": the
// key of its series), media and histogram values ("_type") kept whole.
bj::object CleanSummary(bj::object summary);

// True for a label Cohort accepts (1-128 bytes, no control characters, no '/').
bool IsValidLabel(std::string_view label);

}  // namespace cohort::compat
