#include "agent/client_process.h"

#include "agent/monitor/proc_util.h"

namespace cohort::agent {

Result<std::optional<ClientProcess>> ClientProcess::Identify(int pid,
                                                             const std::string& proc_root) {
  if (pid <= 0) return std::optional<ClientProcess>();
  auto stat = monitor::ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) {
    if (stat.status().code() == StatusCode::kNotFound) return std::optional<ClientProcess>();
    return stat.status();
  }
  monitor::ProcStat st;
  if (!monitor::ParseProcStat(*stat, &st) || st.pid != pid) {
    return Status::Corruption(proc_root + "/" + std::to_string(pid) + "/stat: unparsable");
  }
  // The state is the first field after the command name (which ends at the last ')').
  auto fields = monitor::SplitFields(std::string_view(*stat).substr(stat->rfind(')') + 1));
  if (fields.empty() || fields[0] == "Z" || fields[0] == "X" || fields[0] == "x") {
    return std::optional<ClientProcess>();
  }
  auto boot = monitor::ReadWholeFile(proc_root + "/sys/kernel/random/boot_id");
  ClientProcess p;
  p.pid = pid;
  p.start_ticks = st.start_ticks;
  if (boot.ok()) {
    auto f = monitor::SplitFields(*boot);
    if (!f.empty()) p.boot_id = std::string(f[0]);
  }
  return std::optional<ClientProcess>(std::move(p));
}

std::optional<ClientProcess> ClientProcess::Find(int pid, const std::string& proc_root) {
  auto now = Identify(pid, proc_root);
  return now.ok() ? *now : std::nullopt;
}

bool ClientProcess::Alive(const std::string& proc_root) const {
  std::optional<ClientProcess> now = Find(pid, proc_root);
  return now && *now == *this;
}

bool ClientProcess::Ended(const std::string& proc_root) const {
  auto now = Identify(pid, proc_root);
  if (!now.ok()) return false;  // /proc cannot say
  if (!*now) return true;
  const bool other_boot =
      !boot_id.empty() && !(*now)->boot_id.empty() && (*now)->boot_id != boot_id;
  return (*now)->start_ticks != start_ticks || other_boot;
}

}  // namespace cohort::agent
