#include "agent/monitor/proc_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace cohort::monitor {

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    if (err == ENOENT || err == ESRCH) return Status::NotFound(std::move(msg));
    return Status::IOError(std::move(msg));
  }
  std::string data;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      // A process that exits while we read its files reports ESRCH.
      std::string msg = path + ": " + std::strerror(err);
      if (err == ESRCH) return Status::NotFound(std::move(msg));
      return Status::IOError(std::move(msg));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

std::vector<std::string_view> SplitFields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool FindKeyedNumber(std::string_view text, std::string_view key, uint64_t* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') {
      continue;
    }
    auto fields = SplitFields(line.substr(key.size() + 1));
    return !fields.empty() && ParseU64(fields[0], out);
  }
  return false;
}

bool ParseProcStat(std::string_view text, ProcStat* out) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  uint64_t pid = 0;
  auto head = SplitFields(text.substr(0, open));
  if (head.size() != 1 || !ParseU64(head[0], &pid)) return false;
  // Fields after the command: [0] state (field 3), [1] ppid (4), [11] utime (14),
  // [12] stime (15), [19] starttime (22).
  auto f = SplitFields(text.substr(close + 1));
  if (f.size() < 20) return false;
  uint64_t ppid = 0;
  ProcStat s;
  if (!ParseU64(f[1], &ppid) || !ParseU64(f[11], &s.utime_ticks) ||
      !ParseU64(f[12], &s.stime_ticks) || !ParseU64(f[19], &s.start_ticks)) {
    return false;
  }
  s.pid = static_cast<int>(pid);
  s.ppid = static_cast<int>(ppid);
  *out = s;
  return true;
}

std::vector<int> ListPids(const std::string& proc_root) {
  std::vector<int> pids;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return pids;
  while (struct dirent* e = ::readdir(dir)) {
    uint64_t pid = 0;
    if (ParseU64(e->d_name, &pid) && pid > 0 && pid <= INT32_MAX) {
      pids.push_back(static_cast<int>(pid));
    }
  }
  ::closedir(dir);
  return pids;
}

std::vector<ProcStat> FindProcessTree(const std::string& proc_root, const std::vector<int>& roots) {
  std::vector<ProcStat> tree;
  if (roots.empty()) return tree;
  std::unordered_map<int, ProcStat> all;
  std::unordered_map<int, std::vector<int>> children;
  for (int pid : ListPids(proc_root)) {
    auto text = ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/stat");
    ProcStat st;
    if (!text.ok() || !ParseProcStat(*text, &st)) continue;
    all.emplace(pid, st);
    children[st.ppid].push_back(pid);
  }
  std::unordered_set<int> seen;
  std::vector<int> queue;
  for (int r : roots) {
    if (all.count(r) != 0 && seen.insert(r).second) queue.push_back(r);
  }
  for (size_t i = 0; i < queue.size(); ++i) {
    int pid = queue[i];
    tree.push_back(all[pid]);
    auto it = children.find(pid);
    if (it == children.end()) continue;
    for (int child : it->second) {
      if (seen.insert(child).second) queue.push_back(child);
    }
  }
  return tree;
}

void RootPids::Set(std::vector<int> pids) {
  MutexLock lock(&mu_);
  pids_ = std::move(pids);
}

void RootPids::Add(int pid) {
  MutexLock lock(&mu_);
  if (std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) pids_.push_back(pid);
}

void RootPids::Remove(int pid) {
  MutexLock lock(&mu_);
  pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
}

std::vector<int> RootPids::Get() const {
  MutexLock lock(&mu_);
  return pids_;
}

}  // namespace cohort::monitor
