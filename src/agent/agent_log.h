// Diagnostics of the agent and of the client library: one line per event, "time level text",
// to stderr. The agent's stderr is its log file; inside a training process the client library
// raises the threshold so that only warnings reach the user's console.
// Thread-safe (one mutex keeps each line whole).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace cohort::agent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped. Default kInfo.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, std::string_view text);

template <typename... Args>
void Logf(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (!LogEnabled(level)) return;
  LogLine(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace cohort::agent
