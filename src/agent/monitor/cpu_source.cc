#include "agent/monitor/cpu_source.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace cohort::monitor {
namespace {

// Busy share of `now - prev` in percent; false when no time passed.
bool BusyPercent(uint64_t busy_prev, uint64_t total_prev, uint64_t busy_now, uint64_t total_now,
                 double* out) {
  if (total_now <= total_prev) return false;
  double dtotal = static_cast<double>(total_now - total_prev);
  double dbusy = busy_now >= busy_prev ? static_cast<double>(busy_now - busy_prev) : 0.0;
  *out = std::clamp(dbusy / dtotal * 100.0, 0.0, 100.0);
  return true;
}

}  // namespace

CpuSource::CpuSource(CpuSourceOptions options) : options_(std::move(options)) {
  ticks_per_second_ = options_.clock_ticks_per_second > 0 ? options_.clock_ticks_per_second
                                                          : ::sysconf(_SC_CLK_TCK);
  if (ticks_per_second_ <= 0) ticks_per_second_ = 100;
}

Status CpuSource::ReadStat(Times* all, std::unordered_map<int, Times>* per_cpu) const {
  auto text = ReadWholeFile(options_.proc_root + "/stat");
  if (!text.ok()) return text.status();
  bool found = false;
  std::string_view rest(*text);
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (line.substr(0, 3) != "cpu") continue;
    auto f = SplitFields(line);
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is
    // already part of user time, so only the first eight count.
    if (f.size() < 5) continue;
    uint64_t v[8] = {};
    bool ok = true;
    for (size_t i = 1; i < f.size() && i <= 8; ++i) ok = ok && ParseU64(f[i], &v[i - 1]);
    if (!ok) continue;
    Times t;
    for (uint64_t x : v) t.total += x;
    uint64_t idle = v[3] + v[4];
    t.busy = t.total - idle;
    if (f[0] == "cpu") {
      *all = t;
      found = true;
    } else if (per_cpu != nullptr) {
      uint64_t n = 0;
      if (ParseU64(f[0].substr(3), &n) && n < 1u << 20) (*per_cpu)[static_cast<int>(n)] = t;
    }
  }
  if (!found) return Status::Corruption(options_.proc_root + "/stat: no aggregate cpu line");
  return Status::Ok();
}

bool CpuSource::ReadUptimeTicks(uint64_t* ticks) const {
  auto text = ReadWholeFile(options_.proc_root + "/uptime");
  if (!text.ok()) return false;
  auto f = SplitFields(*text);
  if (f.empty()) return false;
  double seconds = 0;
  auto [ptr, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), seconds);
  if (ec != std::errc() || seconds < 0) return false;
  *ticks = static_cast<uint64_t>(seconds * static_cast<double>(ticks_per_second_));
  return true;
}

uint64_t CpuSource::ScanProcesses(bool* alive) {
  std::vector<int> roots;
  if (options_.pids != nullptr) roots = options_.pids->Get();
  std::vector<ProcStat> tree = FindProcessTree(options_.proc_root, roots);
  uint64_t uptime = 0;
  bool has_uptime = ReadUptimeTicks(&uptime);

  uint64_t used = 0;
  std::unordered_map<int, ProcTicks> now;
  now.reserve(tree.size());
  for (const ProcStat& p : tree) {
    uint64_t ticks = p.utime_ticks + p.stime_ticks;
    auto it = prev_procs_.find(p.pid);
    if (it != prev_procs_.end() && it->second.start_ticks == p.start_ticks) {
      if (ticks >= it->second.cpu_ticks) used += ticks - it->second.cpu_ticks;
    } else if (has_prev_uptime_ && p.start_ticks >= prev_uptime_ticks_) {
      used += ticks;  // started after the previous scan: all its time is in this interval
    }
    // Otherwise a process seen for the first time (a new root, a re-parented process) only
    // sets its baseline, so its past CPU time does not show as a spike.
    now[p.pid] = ProcTicks{p.start_ticks, ticks};
  }
  prev_procs_ = std::move(now);
  has_prev_uptime_ = has_uptime;
  prev_uptime_ticks_ = uptime;
  *alive = !tree.empty();
  return used;
}

Status CpuSource::Open() {
  Times all;
  std::unordered_map<int, Times> per_cpu;
  Status s = ReadStat(&all, options_.per_cpu ? &per_cpu : nullptr);
  if (!s.ok()) return Status::Unavailable("cpu: " + s.ToString());
  prev_ = all;
  prev_per_cpu_ = std::move(per_cpu);
  bool alive = false;
  ScanProcesses(&alive);
  return Status::Ok();
}

Status CpuSource::Sample(int64_t /*now_ms*/, std::vector<monitor::Sample>* out) {
  Times all;
  std::unordered_map<int, Times> per_cpu;
  COHORT_RETURN_IF_ERROR(ReadStat(&all, options_.per_cpu ? &per_cpu : nullptr));
  double pct = 0;
  if (BusyPercent(prev_.busy, prev_.total, all.busy, all.total, &pct)) {
    out->push_back({"cpu", pct});
  }
  if (options_.per_cpu) {
    std::vector<int> ids;
    for (const auto& [id, t] : per_cpu) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (int id : ids) {
      auto it = prev_per_cpu_.find(id);
      const Times& t = per_cpu[id];
      if (it != prev_per_cpu_.end() &&
          BusyPercent(it->second.busy, it->second.total, t.busy, t.total, &pct)) {
        out->push_back({"cpu." + std::to_string(id), pct});
      }
    }
  }
  bool alive = false;
  uint64_t used = ScanProcesses(&alive);
  if (alive && all.total > prev_.total) {
    double share = static_cast<double>(used) / static_cast<double>(all.total - prev_.total);
    out->push_back({"proc.cpu", std::clamp(share * 100.0, 0.0, 100.0)});
  }
  prev_ = all;
  prev_per_cpu_ = std::move(per_cpu);
  return Status::Ok();
}

}  // namespace cohort::monitor
