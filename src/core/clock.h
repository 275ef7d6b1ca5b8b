// Wall-clock and monotonic time in the units the data model uses. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

namespace cohort {

// Milliseconds since the Unix epoch.
inline int64_t NowMillis() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}
// Monotonic nanoseconds, for latency measurement only.
inline int64_t MonoNanos() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace cohort
