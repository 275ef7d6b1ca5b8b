#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace cohort::cli {

ProgressReport::ProgressReport(std::string verb, std::string unit, int64_t total,
                               std::string_view mode)
    : verb_(std::move(verb)),
      unit_(std::move(unit)),
      total_(std::max<int64_t>(total, 1)),
      bar_(mode == "always" || (mode == "auto" && ::isatty(STDERR_FILENO))),
      lines_(!bar_ && mode == "auto"),
      last_(Clock::now()) {}

void ProgressReport::Advance(int64_t n, int64_t bytes) {
  done_ += n;
  bytes_ += bytes;
  if (!bar_ && !lines_) return;
  const int pct = int(std::min<int64_t>(100, done_ * 100 / total_));
  const auto now = Clock::now();
  if (bar_) {
    if (pct == last_pct_ && now - last_ < std::chrono::milliseconds(500)) return;
    last_pct_ = pct;
    last_ = now;
    constexpr int kWidth = 30;
    std::string bar(size_t(pct * kWidth / 100), '#');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld %s", verb_.c_str(), bar.c_str(), pct,
                 static_cast<long long>(done_), static_cast<long long>(total_), unit_.c_str());
    std::fflush(stderr);
    shown_ = true;
    return;
  }
  if (now - last_ < std::chrono::seconds(5)) return;
  last_ = now;
  std::string size;
  if (bytes_ > 0) size = ", " + std::to_string(bytes_) + " bytes";
  std::fprintf(stderr, "%s: %lld/%lld %s (%d%%)%s\n", verb_.c_str(),
               static_cast<long long>(done_), static_cast<long long>(total_), unit_.c_str(), pct,
               size.c_str());
}

void ProgressReport::Finish() {
  if (shown_) std::fputc('\n', stderr);
  shown_ = false;
}

}  // namespace cohort::cli
