// Progress of a long terminal command on stderr (`--progress auto|always|never`): the store
// dump commands' rows, `runs export`'s points, `media get`'s files. "always", or "auto" on a
// terminal: a bar redrawn when its percent changes (at most twice a second otherwise);
// "auto" elsewhere (a batch job's log): a line every 5 s, none for a command that ends sooner;
// "never": nothing. Not thread-safe: one command's thread advances it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace cohort::cli {

class ProgressReport {
 public:
  // `verb` ("exporting") and `unit` ("rows") name what advances; `total` of them are expected.
  ProgressReport(std::string verb, std::string unit, int64_t total, std::string_view mode);
  // `n` more done (and `bytes` more, shown on the lines when any).
  void Advance(int64_t n, int64_t bytes = 0);
  // Ends the bar's line (call before other output on stderr).
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::string verb_, unit_;
  int64_t total_, done_ = 0, bytes_ = 0;
  bool bar_, lines_, shown_ = false;
  int last_pct_ = -1;
  Clock::time_point last_;
};

}  // namespace cohort::cli
