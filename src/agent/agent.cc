#include "agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <list>
#include <thread>

#include "agent/agent_connection.h"
#include "agent/agent_log.h"
#include "agent/agent_paths.h"
#include "agent/ingest.h"
#include "agent/socket_io.h"
#include "core/clock.h"
#include "wal/file.h"

namespace cohort::agent {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  char c = 1;
  (void)!write(g_signal_pipe[1], &c, 1);
}

// A connection and the thread serving it.
struct Client {
  std::unique_ptr<AgentConnection> connection;
  std::thread thread;
};

// Takes the agent lock (an exclusive flock of `path`) and writes this process's pid into the
// file (clients and tests read it); null when another process holds it.
std::unique_ptr<wal::FileLock> TakeLock(wal::FileSystem* fs, const std::string& path) {
  auto lock = fs->LockFile(path);
  if (!lock.ok()) {
    if (lock.status().code() != StatusCode::kFailedPrecondition) {
      Logf(LogLevel::kError, "agent: {}", lock.status().ToString());
    }
    return nullptr;
  }
  auto file = fs->NewWritableFile(path, wal::WriteMode::kTruncate);
  Status s = file.ok() ? (*file)->Append(std::to_string(getpid()) + "\n") : file.status();
  if (file.ok()) {
    Status c = (*file)->Close();
    if (s.ok()) s = c;
  }
  if (!s.ok()) {
    // The agent runs (it holds the lock); only its pid is not where clients look for it.
    Logf(LogLevel::kWarning, "agent: cannot write its pid into {}: {}", path, s.ToString());
  }
  return std::move(*lock);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

AgentOptions AgentOptionsFromEnv() {
  AgentOptions o;
  o.socket_path = Env("COHORT_AGENT_SOCKET");
  o.data_dir = Env("COHORT_DIR");
  if (std::string idle = Env("COHORT_AGENT_IDLE_S"); !idle.empty()) {
    char* end = nullptr;
    double v = std::strtod(idle.c_str(), &end);
    if (end && *end == '\0' && v >= 0) o.idle_exit_s = v;
  }
  o.detach = Env("COHORT_AGENT_DETACH") == "1";
  o.verbose = Env("COHORT_DEBUG") == "1";
  return o;
}

int RunAgent(const AgentOptions& options) {
  if (options.private_fd >= 0) return RunPrivateAgent(options);
  if (options.detach) {
    pid_t pid = fork();  // no threads exist yet in this fresh process
    if (pid < 0) return 1;
    if (pid > 0) _exit(0);
  }
  AgentPaths paths =
      options.socket_path.empty() ? DefaultAgentPaths() : AgentPathsFor(options.socket_path);
  std::string data_dir = options.data_dir.empty() ? DefaultAgentDataDir() : options.data_dir;
  if (options.verbose) SetLogLevel(LogLevel::kDebug);
  signal(SIGPIPE, SIG_IGN);

  Status st = EnsurePrivateDir(paths.dir);
  if (!st.ok()) {
    Logf(LogLevel::kError, "agent: {}", st.ToString());
    return 1;
  }
  std::unique_ptr<wal::FileLock> lock = TakeLock(wal::FileSystem::Default(), paths.lock);
  if (!lock) {
    Logf(LogLevel::kInfo, "agent: another agent holds {}; exiting", paths.lock);
    return 0;
  }
  auto listen_fd = ListenUnix(paths.socket);
  if (!listen_fd.ok()) {
    Logf(LogLevel::kError, "agent: {}", listen_fd.status().ToString());
    return listen_fd.status().code() == StatusCode::kAlreadyExists ? 0 : 1;
  }
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
    struct sigaction sa = {};
    sa.sa_handler = OnSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
  }
  Logf(LogLevel::kInfo, "agent: pid {} listening on {}, data dir {}", getpid(), paths.socket,
       data_dir);

  IngestOptions io;
  io.data_dir = data_dir;
  io.sender.heartbeat_interval_s = options.heartbeat_interval_s;
  io.system_monitor = options.system_monitor;
  auto ingest = std::make_unique<Ingest>(io);
  if (int n = ingest->RecoverDir(data_dir); n > 0) {
    Logf(LogLevel::kInfo, "agent: resumed {} writer(s) from {}", n, data_dir);
  }

  std::list<Client> clients;
  // The idle and linger timers run on the monotonic clock: a wall clock set back (or ahead)
  // must neither keep an idle agent alive for years nor end a busy one early.
  auto mono_ms = [] { return MonoNanos() / 1000000; };
  int64_t idle_since = mono_ms();
  int64_t no_client_since = idle_since;
  int64_t last_tick = 0;
  bool stop = false;
  while (!stop) {
    pollfd fds[2] = {{*listen_fd, POLLIN, 0}, {g_signal_pipe[0], POLLIN, 0}};
    int r = poll(fds, g_signal_pipe[0] >= 0 ? 2 : 1, 250);
    if (r > 0 && (fds[1].revents & POLLIN)) {
      Logf(LogLevel::kInfo, "agent: signal received, stopping");
      break;
    }
    if (r > 0 && (fds[0].revents & POLLIN)) {
      int fd = accept4(*listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        Client& c = clients.emplace_back();
        c.connection = std::make_unique<AgentConnection>(fd, ingest.get());
        AgentConnection* conn = c.connection.get();
        c.thread = std::thread([conn] { conn->Serve(); });
      }
    }
    for (auto it = clients.begin(); it != clients.end();) {
      if (it->connection->done()) {
        it->thread.join();
        it = clients.erase(it);
      } else {
        ++it;
      }
    }
    int64_t now = mono_ms();
    if (now - last_tick >= 1000) {
      last_tick = now;
      ingest->Tick();
    }
    if (!clients.empty()) no_client_since = now;
    if (!clients.empty() || !ingest->Idle()) idle_since = now;
    if (now - idle_since >= options.idle_exit_s * 1000) {
      Logf(LogLevel::kInfo, "agent: idle for {:.0f}s, exiting", options.idle_exit_s);
      stop = true;
    } else if (options.pending_linger_s > 0 &&
               now - no_client_since >= options.pending_linger_s * 1000) {
      Logf(LogLevel::kWarning,
           "agent: uploads still pending after {:.0f}s without clients; exiting (the WALs stay "
           "in {} for the next agent or `cohort sync`)",
           options.pending_linger_s, data_dir);
      stop = true;
    }
  }

  // Stop accepting first, so that a client spawning a new agent finds a fresh one.
  close(*listen_fd);
  unlink(paths.socket.c_str());
  for (Client& c : clients) c.connection->Stop();
  for (Client& c : clients) c.thread.join();
  clients.clear();
  ingest->Tick();
  ingest.reset();
  lock.reset();
  Logf(LogLevel::kInfo, "agent: stopped");
  return 0;
}

}  // namespace cohort::agent
