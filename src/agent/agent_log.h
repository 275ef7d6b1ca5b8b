// Diagnostics of the agent and of the in-process sender: one line per event, "time level text",
// to a sink that defaults to stderr. The agent's stderr is its log file; inside a training
// process (in-process mode) the client library raises the threshold so that only warnings reach
// the user's console. Thread-safe (one mutex around the sink).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string_view>

namespace cohort::agent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped. Default kInfo.
void SetLogLevel(LogLevel level);
// Replaces the sink (null: stderr). The sink is called under the logger's mutex.
void SetLogSink(std::function<void(LogLevel, std::string_view line)> sink);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, std::string_view text);

template <typename... Args>
void Logf(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (!LogEnabled(level)) return;
  LogLine(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace cohort::agent
