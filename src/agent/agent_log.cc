#include "agent/agent_log.h"

#include <unistd.h>

#include <atomic>
#include <ctime>
#include <string>

#include "core/clock.h"
#include "core/mutex.h"

namespace cohort::agent {
namespace {

std::atomic<int> g_level{int(LogLevel::kInfo)};

Mutex& StderrMutex() {
  static auto* mu = new Mutex();
  return *mu;
}

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "?";
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(int(level)); }

bool LogEnabled(LogLevel level) { return int(level) >= g_level.load(std::memory_order_relaxed); }

void LogLine(LogLevel level, std::string_view text) {
  if (!LogEnabled(level)) return;
  int64_t now = NowMillis();
  time_t secs = time_t(now / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = fmt::format("{}.{:03d}Z cohort[{}] {}: {}\n", stamp, int(now % 1000),
                                 int(getpid()), LevelName(level), text);
  MutexLock lock(&StderrMutex());
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += size_t(n);
  }
}

}  // namespace cohort::agent
