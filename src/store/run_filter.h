// Parsing and validation of run-list queries, shared by the store backends: filter clauses
// (store::Filter) become typed RunPredicates, sort names become RunSortField, and the opaque
// keyset-pagination cursor is encoded and decoded here. Each backend turns these into its own
// SQL. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cohort/status.h"
#include "store/run_types.h"

namespace cohort::store {

enum class FilterField {
  kName,
  kGroup,
  kJobType,
  kState,
  kHost,
  kTag,
  kConfig,
  kSummary,
  kCreated,  // created_ms: ==, !=, <, > against integer milliseconds since 1970
  kUpdated,  // updated_ms: the same
};

// created / updated: compared as integers (FilterValue::number holds the operand).
inline bool IsTimeField(FilterField f) {
  return f == FilterField::kCreated || f == FilterField::kUpdated;
}
enum class FilterOp { kEq, kNe, kIn, kNotIn, kContains, kLt, kGt };

// One filter operand: its text, and its number when the text is one (JSON fields compare
// numbers as numbers; "true"/"false" read as 1/0 there).
struct FilterValue {
  std::string text;
  std::optional<double> number;
};

struct RunPredicate {
  FilterField field = FilterField::kName;
  // kConfig / kSummary: the key path below the object as separate segments
  // ("config.optim.lr" -> {"optim", "lr"}).
  std::vector<std::string> path;
  FilterOp op = FilterOp::kEq;
  std::vector<FilterValue> values;  // one for every op but in / not in (one or more)
};

// Validates one clause. kInvalidArgument naming the field, op or value at fault: an unknown
// field or op, an op the field does not support ("<" on tag), a wrong number of values, or a
// state value that is no state name.
Result<RunPredicate> ParseFilter(const Filter& filter);
Result<std::vector<RunPredicate>> ParseFilters(const std::vector<Filter>& filters);

// A JSONPath for SQLite/PostgreSQL json functions: {"a", "b-c"} -> $."a"."b-c".
std::string JsonPath(const std::vector<std::string>& path);

enum class RunSortField {
  kCreated,
  kUpdated,
  kName,
  kState,
  kGroup,
  kJobType,
  kRuntime,
  kConfig,   // config.<key>: a JSON value (RunJsonSortKey)
  kSummary,  // summary.<key>: the same
};

// "created" (also ""), "updated", "name", "state", "group", "job_type", "runtime",
// "config.<key>", "summary.<key>". For the last two, `path` (when given) receives the key's
// segments ("summary.val.loss" -> {"val", "loss"}); kInvalidArgument naming a bad key path.
Result<RunSortField> ParseRunSort(const std::string& sort,
                                  std::vector<std::string>* path = nullptr);
// True when the sort key is an integer (created, updated, runtime), false when text.
bool SortKeyIsInteger(RunSortField f);
inline bool IsJsonSort(RunSortField f) {
  return f == RunSortField::kConfig || f == RunSortField::kSummary;
}

// The sort key of a config./summary. value, in the order of its class first (in both
// directions), then of `number` or `text` in the direction asked for: numbers (booleans as 1/0,
// the strings "Infinity"/"-Infinity" as infinities), then "NaN", then other strings (by bytes),
// then everything else (no such key, null, an object or array).
enum class JsonSortClass { kNumber = 0, kNaN = 1, kText = 2, kMissing = 3 };
struct RunJsonSortKey {
  JsonSortClass cls = JsonSortClass::kMissing;
  double number = 0;  // kNumber
  std::string text;   // kText
};

// Position after the last row of a page: its sort key and store key. The cursor also records
// the sort it was made for (with the key path of a config./summary. sort), so that a cursor
// reused with another sort is rejected.
struct RunCursor {
  RunSortField sort = RunSortField::kCreated;
  bool descending = true;
  std::variant<int64_t, std::string, RunJsonSortKey> key;
  int64_t pk = 0;
  std::string path;  // config./summary. sorts: the key path as given ("val.loss")
};

// Opaque text (hex) safe to put in a URL.
std::string EncodeRunCursor(const RunCursor& c);
// kInvalidArgument when `text` is not a cursor this code made.
Result<RunCursor> DecodeRunCursor(const std::string& text);
// Decodes `text` and checks it was made for `sort`, `descending` and (config./summary. sorts)
// the key path `path` ("val.loss").
Result<RunCursor> DecodeRunCursorFor(const std::string& text, RunSortField sort, bool descending,
                                     const std::string& path = "");

}  // namespace cohort::store
