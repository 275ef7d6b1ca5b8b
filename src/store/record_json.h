// JSON columns of store records, shared by the store backends: merging objects key by key,
// and string/integer arrays to and from JSON text. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::store {

// The largest config, summary or metadata of a run, as JSON text: what the API and the W&B layer
// answer for one run stays bounded.
inline constexpr size_t kMaxRunDocumentBytes = 1 << 20;

// What a null value of a patch does to its key (MergeJsonObject).
enum class PatchNull {
  kDeletes,  // the summary: JSON Merge Patch (RFC 7396)
  kIsValue,  // the config: None is a value users set (argparse defaults); keys leave by name
};

// Merges the JSON object `patch` into the JSON object `base` key by key (top level): a key in
// `patch` replaces the key in `base` (a null value as `nulls` says), then the keys `remove` are
// removed. kInvalidArgument naming `what` when `patch` is not a JSON object; a `base` that is not
// an object counts as {}; kPayloadTooLarge naming `what` when the result is over
// kMaxRunDocumentBytes.
Result<std::string> MergeJsonObject(std::string_view base, std::string_view patch,
                                    std::string_view what, PatchNull nulls = PatchNull::kDeletes,
                                    const std::vector<std::string>& remove = {});

// ["a","b"] <-> {"a", "b"}. Reading tolerates bad text (returns what it can).
std::string StringsToJson(const std::vector<std::string>& v);
std::vector<std::string> StringsFromJson(std::string_view text);
std::string IntsToJson(const std::vector<int64_t>& v);
std::vector<int64_t> IntsFromJson(std::string_view text);

}  // namespace cohort::store
