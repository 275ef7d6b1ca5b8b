// CpuSource: machine-wide CPU use from /proc/stat deltas ("cpu", optional "cpu.<n>") and the
// CPU share of the monitored process trees from /proc/<pid>/stat ("proc.cpu").
//
// Percentages are of the whole machine (all CPUs = 100), so "proc.cpu" and "cpu" compare
// directly. Both come from deltas between consecutive calls (the first against Open()).
// Threading: as MonitorSource (one thread at a time); the RootPids handle may be updated from
// any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/monitor/proc_util.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

struct CpuSourceOptions {
  std::string proc_root = kDefaultProcRoot;
  // Roots of the process trees for "proc.cpu"; null or empty: no "proc.cpu".
  std::shared_ptr<const RootPids> pids;
  bool per_cpu = false;  // also "cpu.<n>" per logical CPU
  // USER_HZ; 0 means sysconf(_SC_CLK_TCK). Used only to tell processes that started since
  // the previous sample (their whole CPU time counts) from ones seen for the first time.
  int64_t clock_ticks_per_second = 0;
};

class CpuSource : public MonitorSource {
 public:
  explicit CpuSource(CpuSourceOptions options);

  std::string_view name() const override { return "cpu"; }
  Status Open() override;
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override;

 private:
  struct Times {
    uint64_t busy = 0;
    uint64_t total = 0;
  };
  struct ProcTicks {
    uint64_t start_ticks = 0;
    uint64_t cpu_ticks = 0;
  };
  // Reads /proc/stat: the aggregate line into `all`, the "cpuN" lines into `per_cpu`.
  Status ReadStat(Times* all, std::unordered_map<int, Times>* per_cpu) const;
  // Reads /proc/uptime in clock ticks; false when unreadable.
  bool ReadUptimeTicks(uint64_t* ticks) const;
  // Rescans the process trees; returns the ticks they used since the previous scan and
  // makes this scan the new baseline. `*alive` is false when no root exists.
  uint64_t ScanProcesses(bool* alive);

  const CpuSourceOptions options_;
  int64_t ticks_per_second_;
  Times prev_;
  std::unordered_map<int, Times> prev_per_cpu_;
  std::unordered_map<int, ProcTicks> prev_procs_;  // by pid
  bool has_prev_uptime_ = false;
  uint64_t prev_uptime_ticks_ = 0;
};

}  // namespace cohort::monitor
