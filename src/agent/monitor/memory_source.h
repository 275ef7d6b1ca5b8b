// MemorySource: machine RAM use from /proc/meminfo ("memory", "memory.used_mb") and the
// resident set size of the monitored process trees from /proc/<pid>/status VmRSS
// ("proc.memory.rss_mb").
//
// Used memory is MemTotal - MemAvailable (MemFree + Buffers + Cached on kernels without
// MemAvailable), as `free` reports it. Threading: as MonitorSource; the RootPids handle may be
// updated from any thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/monitor/proc_util.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

struct MemorySourceOptions {
  std::string proc_root = kDefaultProcRoot;
  // Roots of the process trees for "proc.memory.rss_mb"; null or empty: no such key.
  std::shared_ptr<const RootPids> pids;
};

class MemorySource : public MonitorSource {
 public:
  explicit MemorySource(MemorySourceOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "memory"; }
  Status Open() override;
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override;

 private:
  // Reads /proc/meminfo into total and used kB.
  Status ReadMeminfo(uint64_t* total_kb, uint64_t* used_kb) const;

  const MemorySourceOptions options_;
};

}  // namespace cohort::monitor
