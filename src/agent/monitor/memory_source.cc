#include "agent/monitor/memory_source.h"

namespace cohort::monitor {

Status MemorySource::ReadMeminfo(uint64_t* total_kb, uint64_t* used_kb) const {
  const std::string path = options_.proc_root + "/meminfo";
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  uint64_t total = 0;
  uint64_t available = 0;
  if (!FindKeyedNumber(*text, "MemTotal", &total) || total == 0) {
    return Status::Corruption(path + ": no MemTotal");
  }
  if (!FindKeyedNumber(*text, "MemAvailable", &available)) {
    uint64_t free = 0, buffers = 0, cached = 0;
    if (!FindKeyedNumber(*text, "MemFree", &free)) {
      return Status::Corruption(path + ": neither MemAvailable nor MemFree");
    }
    FindKeyedNumber(*text, "Buffers", &buffers);
    FindKeyedNumber(*text, "Cached", &cached);
    available = free + buffers + cached;
  }
  *total_kb = total;
  *used_kb = available >= total ? 0 : total - available;
  return Status::Ok();
}

Status MemorySource::Open() {
  uint64_t total = 0, used = 0;
  Status s = ReadMeminfo(&total, &used);
  if (!s.ok()) return Status::Unavailable("memory: " + s.ToString());
  return Status::Ok();
}

Status MemorySource::Sample(int64_t /*now_ms*/, std::vector<monitor::Sample>* out) {
  uint64_t total = 0, used = 0;
  Status s = ReadMeminfo(&total, &used);
  if (s.ok()) {
    out->push_back({"memory", static_cast<double>(used) / static_cast<double>(total) * 100.0});
    out->push_back({"memory.used_mb", static_cast<double>(used) / 1024.0});
  }
  if (options_.pids != nullptr) {
    std::vector<ProcStat> tree = FindProcessTree(options_.proc_root, options_.pids->Get());
    uint64_t rss_kb = 0;
    bool any = false;
    for (const ProcStat& p : tree) {
      auto status = ReadWholeFile(options_.proc_root + "/" + std::to_string(p.pid) + "/status");
      uint64_t kb = 0;
      // Kernel threads and zombies have no VmRSS line; they hold no user memory.
      if (status.ok() && FindKeyedNumber(*status, "VmRSS", &kb)) rss_kb += kb;
      any = any || status.ok();
    }
    if (any) out->push_back({"proc.memory.rss_mb", static_cast<double>(rss_kb) / 1024.0});
  }
  return s;
}

}  // namespace cohort::monitor
