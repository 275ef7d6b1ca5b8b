// Terminal output of the read commands (`cohort runs`, `cohort logs`): aligned tables, state
// colours, and number / time / duration formatting. Pure functions and a value type;
// thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::cli {

// `relative` (a server's name of a file: a manifest path, a media key) as a path under `root`,
// its empty and "." segments left out; kInvalidArgument naming `what` when it would leave it
// (absolute, a ".." segment) or names nothing: a name on the server never writes outside the
// directory asked for.
Result<std::string> PathUnder(const std::string& root, const std::string& relative,
                              std::string_view what);

// True when `stream` is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
// `mode`: "always" / "never" force it, anything else is "auto".
bool UseColor(std::FILE* stream, std::string_view mode);

// `text` wrapped in the ANSI colour of a run or writer state (running: cyan, finished: green,
// failed / crashed: red, killed / preempted: yellow); unchanged when !color or another state.
std::string ColorState(std::string_view state, bool color);

// A table printed with columns padded to their widest cell (display width in code points;
// colour escapes do not count). The last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // `display` (optional) replaces a cell's text when printed, e.g. a coloured version.
  void AddRow(std::vector<std::string> cells, std::vector<std::string> display = {});
  void Print(std::FILE* out, std::string_view indent = "") const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_, display_;
};

// Orders labels with numbers compared as numbers: "rank_2" < "rank_10".
bool NaturalLess(std::string_view a, std::string_view b);

// Compact JSON text of `v` with numbers in their shortest form ("0.1", not "1E-1").
std::string CompactJson(const boost::json::value& v);

// Shortest text that reads back as the same double; "NaN", "Infinity", "-Infinity".
std::string FormatDouble(double d);
// "2026-11-30 22:12:05" (UTC) from milliseconds since the epoch; "-" for 0.
std::string FormatTime(int64_t ms);
// "850ms", "42s", "3m07s", "2h05m", "3d04h".
std::string FormatDuration(int64_t ms);

}  // namespace cohort::cli
