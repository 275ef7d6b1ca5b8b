#include "client/spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "agent/socket_io.h"
#include "core/thread_signals.h"

extern char** environ;

namespace cohort::client {
namespace {

namespace fs = std::filesystem;

bool Executable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && access(path.c_str(), X_OK) == 0 && !fs::is_directory(path, ec);
}

// Any address inside this library, to find the file it was loaded from.
void Anchor() {}

constexpr int64_t kRespawnIntervalMs = 1000;
constexpr int kPrivateAgentFd = 3;  // the private agent's end of the socketpair, in the agent

// Reaps `pid` off the calling thread, so that an agent never lingers as a zombie of the
// training process and nothing waits for it.
void ReapInBackground(pid_t pid) {
  AsyncSignalsBlocked quiet;  // the host's signals go to its own threads (thread_signals.h)
  std::thread([pid] {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }).detach();
}

// The environment of a spawned agent: ours, with the agent's settings replaced.
std::vector<std::string> AgentEnvironment(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    bool replaced = false;
    for (const std::string& s : set) {
      replaced = replaced || kv.substr(0, kv.find('=') + 1) == s.substr(0, s.find('=') + 1);
    }
    if (!replaced) env.emplace_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

// posix_spawn of `argv` with `env`: stdin and stdout on /dev/null, stderr appended to
// <data_dir>/agent.log, descriptor `keep_fd` (>= 0) as `kPrivateAgentFd`, nothing else
// inherited, a new session, default signal dispositions.
Result<pid_t> SpawnDetached(const std::string& binary, std::vector<std::string> args,
                            std::vector<std::string> env, const std::string& data_dir,
                            int keep_fd) {
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::string log = data_dir + "/agent.log";
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  int first_closed = 3;
  if (keep_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, keep_fd, kPrivateAgentFd);  // clears close-on-exec
    first_closed = kPrivateAgentFd + 1;
  }
  posix_spawn_file_actions_addclosefrom_np(&fa, first_closed);  // nothing of the process leaks

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2, SIGPIPE}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, binary.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::Unavailable("spawn " + binary + ": " + std::strerror(rc));
  return pid;
}

}  // namespace

Result<std::string> FindCohortBinary() {
  if (const char* bin = std::getenv("COHORT_BIN"); bin && *bin) {
    if (Executable(bin)) return std::string(bin);
    return Status::NotFound(std::string("COHORT_BIN=") + bin + " is not executable");
  }
  std::vector<std::string> candidates;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&Anchor), &info) && info.dli_fname) {
    std::error_code ec;
    fs::path module = fs::weakly_canonical(fs::path(info.dli_fname), ec);
    if (ec) module = fs::path(info.dli_fname);
    candidates.push_back((module.parent_path() / "cohort").string());
    candidates.push_back((module.parent_path().parent_path() / "bin" / "cohort").string());
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    candidates.push_back((fs::path(self).parent_path() / "cohort").string());
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      if (end > start) candidates.push_back(p.substr(start, end - start) + "/cohort");
      start = end + 1;
    }
  }
  for (const std::string& c : candidates) {
    if (Executable(c)) return c;
  }
  return Status::NotFound("no cohort binary found (set COHORT_BIN)");
}

Status SpawnAgent(const std::string& binary, const agent::AgentPaths& paths,
                  const std::string& data_dir) {
  COHORT_RETURN_IF_ERROR(agent::EnsurePrivateDir(paths.dir));
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  COHORT_ASSIGN_OR_RETURN(
      pid_t pid, SpawnDetached(binary, {"cohort", "agent"},
                               AgentEnvironment({"COHORT_AGENT_SOCKET=" + paths.socket,
                                                 "COHORT_DIR=" + data_dir,
                                                 "COHORT_AGENT_DETACH=1"}),
                               data_dir, -1));
  // The agent forks away at once (COHORT_AGENT_DETACH) and its first process exits; a binary
  // that does not detach exits when idle.
  ReapInBackground(pid);
  return Status::Ok();
}

Result<int> SpawnPrivateAgent(const std::string& binary, const std::string& data_dir) {
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::Unavailable(std::string("socketpair: ") + std::strerror(errno));
  }
  // The agent's end goes to its descriptor 3 by dup2, which clears close-on-exec only when it
  // copies: an end that already is descriptor 3 is moved out of the way first.
  int child_end = sv[1];
  if (child_end <= kPrivateAgentFd) {
    child_end = fcntl(sv[1], F_DUPFD_CLOEXEC, kPrivateAgentFd + 1);
    close(sv[1]);
    if (child_end < 0) {
      close(sv[0]);
      return Status::Unavailable(std::string("dup: ") + std::strerror(errno));
    }
  }
  auto pid =
      SpawnDetached(binary, {"cohort", "agent", "--private", "--fd", std::to_string(kPrivateAgentFd)},
                    AgentEnvironment({"COHORT_DIR=" + data_dir}), data_dir, child_end);
  close(child_end);
  if (!pid.ok()) {
    close(sv[0]);
    return pid.status();
  }
  ReapInBackground(*pid);
  return sv[0];
}

Result<std::unique_ptr<AgentTransport>> StartPrivateAgent(const std::string& data_dir,
                                                          int64_t deadline_ms) {
  auto binary = FindCohortBinary();
  if (!binary.ok()) {
    return Status(binary.status().code(),
                  "cannot start a private agent: " + binary.status().message());
  }
  COHORT_ASSIGN_OR_RETURN(int fd, SpawnPrivateAgent(*binary, data_dir));
  auto t = AgentTransport::FromDescriptor(fd, deadline_ms);
  if (!t.ok()) {
    return Status(t.status().code(), "private agent " + *binary + ": " + t.status().message());
  }
  return t;
}

Result<std::unique_ptr<AgentTransport>> ConnectOrSpawnAgent(const agent::AgentPaths& paths,
                                                            const std::string& data_dir,
                                                            bool allow_spawn, int64_t deadline_ms) {
  auto t = AgentTransport::Connect(paths.socket, deadline_ms);
  if (t.ok() || !allow_spawn) return t;
  COHORT_ASSIGN_OR_RETURN(std::string binary, FindCohortBinary());
  COHORT_RETURN_IF_ERROR(SpawnAgent(binary, paths, data_dir));
  int64_t spawned_ms = agent::MonoMillis();
  int delay_ms = 2;
  while (agent::MonoMillis() < deadline_ms) {
    t = AgentTransport::Connect(paths.socket, deadline_ms);
    if (t.ok()) return t;
    // An agent that was exiting (idle, or told to stop) still held the agent lock when ours
    // started, so ours exited at once; or ours died young. Then nobody will ever listen: spawn
    // again now and then. A redundant agent finds the lock taken and exits at once.
    if (agent::MonoMillis() - spawned_ms >= kRespawnIntervalMs) {
      COHORT_RETURN_IF_ERROR(SpawnAgent(binary, paths, data_dir));
      spawned_ms = agent::MonoMillis();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 50);
  }
  return Status::DeadlineExceeded("agent did not come up in time: " + t.status().message());
}

}  // namespace cohort::client
