#include "agent/staging_claim.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"

namespace cohort::agent {
namespace {

bool ParseDecimal(std::string_view f, uint64_t* out) {
  if (f.empty() || f.size() > 20 || f[0] < '0' || f[0] > '9') return false;
  const std::string s(f);
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && end == s.c_str() + s.size();
}

std::string_view TrimEnd(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

// The lock files this process holds, by staging root (a client may be told another root by a
// later agent), each with its path.
using LockFiles = std::map<std::string, std::pair<std::string, std::unique_ptr<wal::FileLock>>>;
struct ProcessClaims {
  Mutex mu;
  LockFiles by_root COHORT_GUARDED_BY(mu);
  // Lock files replaced by new ones, still held: directories not handed over yet link them.
  std::vector<std::unique_ptr<wal::FileLock>> retired COHORT_GUARDED_BY(mu);
};

ProcessClaims* const g_claims = new ProcessClaims;  // never destroyed: locks last with the process

// Around fork: the map is whole in the child (no thread of the parent was changing it), and the
// child lets go of its copies of the parent's locks without unlocking them; it takes its own.
void BeforeFork() COHORT_NO_THREAD_SAFETY_ANALYSIS { g_claims->mu.Lock(); }
void AfterForkInParent() COHORT_NO_THREAD_SAFETY_ANALYSIS { g_claims->mu.Unlock(); }
void AfterForkInChild() COHORT_NO_THREAD_SAFETY_ANALYSIS {
  for (auto& [root, file] : g_claims->by_root) file.second->CloseInForkedChild();
  for (auto& held : g_claims->retired) held->CloseInForkedChild();
  g_claims->by_root.clear();
  g_claims->retired.clear();
  g_claims->mu.Unlock();
}

// At load time, so that no fork can come while it is being set up.
[[maybe_unused]] const int g_fork_handlers =
    pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild);

// This process's lock file under `root`, made and locked on first use (`fresh`: made again, the
// one known having gone); empty when it cannot be.
std::string ProcessLockFile(wal::FileSystem* fs, const std::string& root, const StagingOwner& me,
                            uint64_t pid_ns, bool fresh) {
  MutexLock lock(&g_claims->mu);
  auto it = g_claims->by_root.find(root);
  if (it != g_claims->by_root.end()) {
    if (!fresh) return it->second.first;
    g_claims->retired.push_back(std::move(it->second.second));
    g_claims->by_root.erase(it);
  }
  const std::string dir = wal::JoinPath(root, kStagingClientsDir);
  if (!fs->CreateDir(dir).ok()) return {};
  std::string path = wal::JoinPath(dir, std::to_string(pid_ns) + "." + std::to_string(me.pid) +
                                            "." + std::to_string(me.start_ticks));
  if (fresh) path += "." + std::to_string(NowMillis());
  // Locked before it has its name: the agent never finds it under that name unlocked while this
  // process runs (it removes free lock files).
  const std::string tmp = path + ".tmp";
  auto held = fs->LockFile(tmp);
  if (!held.ok()) return {};
  auto file = fs->NewWritableFile(tmp, wal::WriteMode::kTruncate);
  Status st = file.ok() ? (*file)->Append(std::to_string(pid_ns) + "\n") : file.status();
  if (st.ok()) st = (*file)->Close();
  if (st.ok()) st = fs->Rename(tmp, path);
  if (!st.ok()) {
    (void)fs->Remove(tmp);
    return {};
  }
  g_claims->by_root[root] = {path, std::move(*held)};
  return path;
}

}  // namespace

std::string StagingOwnerText(const StagingOwner& o) {
  return std::to_string(o.pid) + " " + std::to_string(o.start_ticks) + " " + o.boot_id + "\n";
}

std::optional<StagingOwner> ParseStagingOwner(std::string_view text) {
  text = TrimEnd(text);
  std::vector<std::string_view> fields;
  for (size_t at = 0; at <= text.size();) {
    size_t sp = text.find(' ', at);
    if (sp == std::string_view::npos) sp = text.size();
    fields.push_back(text.substr(at, sp - at));
    at = sp + 1;
  }
  if (fields.size() != 3 || fields[2].empty()) return std::nullopt;
  StagingOwner o;
  uint64_t pid = 0;
  if (!ParseDecimal(fields[0], &pid) || pid == 0 || pid > uint64_t(INT64_MAX)) return std::nullopt;
  if (!ParseDecimal(fields[1], &o.start_ticks)) return std::nullopt;
  o.pid = int64_t(pid);
  o.boot_id = std::string(fields[2]);
  return o;
}

std::optional<StagingOwner> ThisProcessAsOwner(wal::FileSystem* fs) {
  auto stat = wal::ReadFileToString(fs, "/proc/self/stat", 1 << 16);
  auto boot = wal::ReadFileToString(fs, "/proc/sys/kernel/random/boot_id", 256);
  if (!stat.ok() || !boot.ok()) return std::nullopt;
  // After the command's closing parenthesis: field 3 onwards; start time is field 22.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < stat->size()) {
    size_t sp = stat->find(' ', at);
    if (sp == std::string::npos) sp = stat->size();
    fields.push_back(stat->substr(at, sp - at));
    at = sp + 1;
  }
  if (fields.size() < 20) return std::nullopt;
  StagingOwner o;
  o.pid = int64_t(getpid());
  o.start_ticks = std::strtoull(fields[19].c_str(), nullptr, 10);  // field 22
  o.boot_id = std::string(TrimEnd(*boot));
  if (o.boot_id.empty() || o.boot_id.find(' ') != std::string::npos) return std::nullopt;
  return o;
}

uint64_t ThisPidNamespace(wal::FileSystem* fs) {
  auto st = fs->Stat("/proc/self/ns/pid");
  return st.ok() ? st->inode : 0;
}

uint64_t ParseStagingLockNamespace(std::string_view text) {
  uint64_t ns = 0;
  return ParseDecimal(TrimEnd(text), &ns) ? ns : 0;
}

Status ClaimStaging(wal::FileSystem* fs, const std::string& dir) {
  auto me = ThisProcessAsOwner(fs);
  const uint64_t pid_ns = ThisPidNamespace(fs);
  const size_t slash = dir.find_last_of('/');
  if (!me || pid_ns == 0 || slash == std::string::npos || slash == 0) return Status::Ok();
  const std::string root = dir.substr(0, slash);
  const std::string link = wal::JoinPath(dir, kStagingLockFile);
  // A second try with a lock file made again only when the one known has gone (its root made
  // again): on a file system without hard links every claim fails its link, and a new lock file
  // (and held descriptor) per claim would pile up for the life of the process.
  bool linked = false;
  for (bool fresh : {false, true}) {
    const std::string lock = ProcessLockFile(fs, root, *me, pid_ns, fresh);
    if (lock.empty()) return Status::Ok();
    if (fs->Link(lock, link).ok()) {
      linked = true;
      break;
    }
    if (Result<bool> there = fs->Exists(lock); !there.ok() || *there) break;
  }
  // Unclaimed (no .owner): never deleted by the agent before its intent's outcome.
  if (!linked) return Status::Ok();
  return wal::WriteFileAtomically(fs, wal::JoinPath(dir, kStagingOwnerFile),
                                  StagingOwnerText(*me));
}

}  // namespace cohort::agent
