#include "client/spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "agent/socket_io.h"

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

  // Environment: ours, with the agent's settings replaced.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("COHORT_AGENT_SOCKET=") || kv.starts_with("COHORT_DIR=") ||
        kv.starts_with("COHORT_AGENT_DETACH=")) {
      continue;
    }
    env.emplace_back(kv);
  }
  env.push_back("COHORT_AGENT_SOCKET=" + paths.socket);
  env.push_back("COHORT_DIR=" + data_dir);
  env.push_back("COHORT_AGENT_DETACH=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = "cohort", arg1 = "agent";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::string log = data_dir + "/agent.log";
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // nothing of the training process leaks

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, binary.c_str(), &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::Unavailable("spawn " + binary + ": " + std::strerror(rc));
  // The agent forks away at once (COHORT_AGENT_DETACH) and its first process exits; a binary
  // that does not detach exits when idle. Either way reap it off this thread, so that it never
  // lingers as a zombie of the training process and Init never waits for it.
  std::thread([pid] {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }).detach();
  return Status::Ok();
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
