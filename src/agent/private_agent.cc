// `cohort agent --private --fd N`: the agent of one training process (agent.h RunPrivateAgent).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "agent/agent.h"
#include "agent/agent_connection.h"
#include "agent/agent_log.h"
#include "agent/agent_paths.h"
#include "agent/ingest.h"
#include "core/clock.h"

namespace cohort::agent {
namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

int64_t MonoMs() { return MonoNanos() / 1000000; }

}  // namespace

int RunPrivateAgent(const AgentOptions& options) {
  const int fd = options.private_fd;
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    Logf(LogLevel::kError, "private agent: descriptor {} is not open", fd);
    return 1;
  }
  if (options.verbose) SetLogLevel(LogLevel::kDebug);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const pid_t client = getppid();  // the training process that spawned this one
  const std::string data_dir =
      options.data_dir.empty() ? DefaultAgentDataDir() : options.data_dir;
  Logf(LogLevel::kInfo, "private agent: pid {} serving pid {}, data dir {}", getpid(), client,
       data_dir);

  IngestOptions io;
  io.data_dir = data_dir;
  io.sender.heartbeat_interval_s = options.heartbeat_interval_s;
  io.system_monitor = options.system_monitor;
  auto ingest = std::make_unique<Ingest>(io);
  auto connection = std::make_unique<AgentConnection>(fd, ingest.get());
  AgentConnection* conn = connection.get();
  std::thread serve([conn] { conn->Serve(); });
  int64_t last_tick = 0;
  auto tick = [&] {
    if (MonoMs() - last_tick >= 1000) {
      last_tick = MonoMs();
      ingest->Tick();
    }
  };
  while (!conn->done() && !g_stop.load()) {
    poll(nullptr, 0, 100);
    tick();
  }
  if (!conn->done()) conn->Stop();
  serve.join();
  const bool finished = conn->finished();
  connection.reset();  // without finish, the writer is recorded crashed (as the shared agent does)
  if (!g_stop.load() && !finished && getppid() == client) {
    // The client lives and let go of this connection without finishing: it is opening its
    // writer again on a new private agent, which needs the writer's WAL. Let go of it now; the
    // new agent uploads what is left.
    Logf(LogLevel::kInfo, "private agent: the client dropped the connection; releasing its writer");
    ingest.reset();
    return 0;
  }
  // The client finished (or is gone): upload what is left, then exit.
  const int64_t start = MonoMs();
  while (!g_stop.load() && !ingest->Idle()) {
    if (options.pending_linger_s > 0 && MonoMs() - start >= options.pending_linger_s * 1000) {
      Logf(LogLevel::kWarning,
           "private agent: uploads still pending after {:.0f}s; exiting (the WAL stays in {} for "
           "the next agent or `cohort sync`)",
           options.pending_linger_s, data_dir);
      break;
    }
    poll(nullptr, 0, 100);
    tick();
  }
  last_tick = 0;
  tick();
  ingest.reset();
  Logf(LogLevel::kInfo, "private agent: stopped");
  return 0;
}

}  // namespace cohort::agent
