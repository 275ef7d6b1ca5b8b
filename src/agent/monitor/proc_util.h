// Helpers shared by the /proc-based monitor sources: reading /proc files, parsing their
// fields, finding a process tree, and RootPids, the set of processes the monitor watches.
//
// Free functions are stateless and thread-safe. RootPids is thread-safe (internal mutex).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"

namespace cohort::monitor {

inline constexpr char kDefaultProcRoot[] = "/proc";

// Reads a whole file. Works for /proc files, whose stat() size is 0. kNotFound when the file
// does not exist, kIOError for other failures.
Result<std::string> ReadWholeFile(const std::string& path);

// Splits on runs of spaces and tabs (and newlines); no empty pieces.
std::vector<std::string_view> SplitFields(std::string_view s);

// Parses a whole decimal unsigned integer; false on anything else (sign, junk, overflow).
bool ParseU64(std::string_view s, uint64_t* out);

// In "Key:   123 kB\n..." text (/proc/meminfo, /proc/<pid>/status), finds the line for `key`
// and parses its first number into `out`. False when absent or malformed.
bool FindKeyedNumber(std::string_view text, std::string_view key, uint64_t* out);

// The fields of /proc/<pid>/stat the monitor uses.
struct ProcStat {
  int pid = 0;
  int ppid = 0;
  uint64_t utime_ticks = 0;  // user CPU time, clock ticks (USER_HZ)
  uint64_t stime_ticks = 0;  // system CPU time, clock ticks
  uint64_t start_ticks = 0;  // start time after boot, clock ticks
};

// Parses one /proc/<pid>/stat line. The command name may contain spaces and parentheses; it
// ends at the last ')'. False when the line is malformed.
bool ParseProcStat(std::string_view text, ProcStat* out);

// The numeric entries (process ids) of `proc_root`, in directory order. Empty when it cannot
// be read.
std::vector<int> ListPids(const std::string& proc_root);

// The processes of the trees rooted at `roots`: each root that exists and every descendant
// (by ppid), each once, with its stat fields. Processes that vanish during the scan are left
// out. Empty (no scan at all) when `roots` is empty.
std::vector<ProcStat> FindProcessTree(const std::string& proc_root, const std::vector<int>& roots);

// RootPids: the processes whose trees the cpu and memory sources measure ("proc.*" keys),
// shared by those sources and updated by the agent as training processes come and go.
// Thread-safe.
class RootPids {
 public:
  RootPids() = default;
  explicit RootPids(std::vector<int> pids) : pids_(std::move(pids)) {}

  void Set(std::vector<int> pids);
  void Add(int pid);     // no-op when present
  void Remove(int pid);  // no-op when absent
  std::vector<int> Get() const;

 private:
  mutable Mutex mu_;
  std::vector<int> pids_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::monitor
