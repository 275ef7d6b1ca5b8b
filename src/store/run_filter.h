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

enum class RunSortField { kCreated, kUpdated, kName, kState, kGroup, kJobType, kRuntime };

// "created" (also ""), "updated", "name", "state", "group", "job_type", "runtime".
Result<RunSortField> ParseRunSort(const std::string& sort);
// True when the sort key is an integer (created, updated, runtime), false when text.
bool SortKeyIsInteger(RunSortField f);

// Position after the last row of a page: its sort key and store key. The cursor also records
// the sort it was made for, so that a cursor reused with another sort is rejected.
struct RunCursor {
  RunSortField sort = RunSortField::kCreated;
  bool descending = true;
  std::variant<int64_t, std::string> key;
  int64_t pk = 0;
};

// Opaque text (hex) safe to put in a URL.
std::string EncodeRunCursor(const RunCursor& c);
// kInvalidArgument when `text` is not a cursor this code made.
Result<RunCursor> DecodeRunCursor(const std::string& text);
// Decodes `text` and checks it was made for `sort` and `descending`.
Result<RunCursor> DecodeRunCursorFor(const std::string& text, RunSortField sort, bool descending);

}  // namespace cohort::store
