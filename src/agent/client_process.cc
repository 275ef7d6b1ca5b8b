#include "agent/client_process.h"

#include "agent/monitor/proc_util.h"

namespace cohort::agent {

std::optional<ClientProcess> ClientProcess::Find(int pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  auto stat = monitor::ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/stat");
  monitor::ProcStat st;
  if (!stat.ok() || !monitor::ParseProcStat(*stat, &st) || st.pid != pid) return std::nullopt;
  // The state is the first field after the command name (which ends at the last ')').
  auto fields = monitor::SplitFields(std::string_view(*stat).substr(stat->rfind(')') + 1));
  if (fields.empty() || fields[0] == "Z" || fields[0] == "X" || fields[0] == "x") {
    return std::nullopt;
  }
  auto boot = monitor::ReadWholeFile(proc_root + "/sys/kernel/random/boot_id");
  ClientProcess p;
  p.pid = pid;
  p.start_ticks = st.start_ticks;
  if (boot.ok()) {
    auto f = monitor::SplitFields(*boot);
    if (!f.empty()) p.boot_id = std::string(f[0]);
  }
  return p;
}

bool ClientProcess::Alive(const std::string& proc_root) const {
  std::optional<ClientProcess> now = Find(pid, proc_root);
  return now && *now == *this;
}

bool ClientProcess::Ended(const std::string& proc_root) const {
  auto stat = monitor::ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return stat.status().code() == StatusCode::kNotFound;
  monitor::ProcStat st;
  if (!monitor::ParseProcStat(*stat, &st) || st.pid != pid) return false;
  auto fields = monitor::SplitFields(std::string_view(*stat).substr(stat->rfind(')') + 1));
  if (!fields.empty() && (fields[0] == "Z" || fields[0] == "X" || fields[0] == "x")) return true;
  if (st.start_ticks != start_ticks) return true;
  auto boot = monitor::ReadWholeFile(proc_root + "/sys/kernel/random/boot_id");
  if (boot.ok() && !boot_id.empty()) {
    auto f = monitor::SplitFields(*boot);
    if (!f.empty() && std::string(f[0]) != boot_id) return true;
  }
  return false;
}

}  // namespace cohort::agent
