// The node agent process (`cohort agent`): one per machine and user, spawned on demand by the
// first client. It listens on a Unix socket (agent_paths.h), holds a lock file so only one runs,
// resumes the WALs it finds in its data directory, serves client connections (Ingest) and exits
// after `idle_exit_s` without clients and without anything left to upload.
#pragma once

#include <string>

namespace cohort::agent {

struct AgentOptions {
  std::string socket_path;   // empty: DefaultAgentPaths().socket
  std::string data_dir;      // empty: DefaultAgentDataDir()
  double idle_exit_s = 60;   // exit after this long with no client and nothing to upload
  // With no client but uploads still failing (server down), give up after this long; the
  // WALs stay on disk for the next agent or `cohort sync`. 0: never.
  double pending_linger_s = 3600;
  double heartbeat_interval_s = 30;
  bool system_monitor = true;
  bool verbose = false;      // debug lines in the log
  // Fork once at start and let the first process exit at once, so that the client that
  // spawned the agent can reap it and the agent never becomes its zombie.
  bool detach = false;
  // >= 0: a private agent (RunPrivateAgent) serving the one connection on this descriptor.
  int private_fd = -1;
};

// Defaults overridden by the environment a spawning client sets: COHORT_AGENT_SOCKET
// (socket_path), COHORT_DIR (data_dir), COHORT_AGENT_IDLE_S (idle_exit_s),
// COHORT_AGENT_DETACH=1 (detach), COHORT_DEBUG=1 (verbose). The CLI applies its flags on top.
AgentOptions AgentOptionsFromEnv();

// Runs the agent until it is idle or gets SIGTERM/SIGINT. Returns the process exit code: 0 on
// a normal exit and also when another agent already serves this socket (nothing to do), 1 when
// it could not start. With options.private_fd >= 0 it runs RunPrivateAgent instead.
int RunAgent(const AgentOptions& options);

// A private agent (`cohort agent --private --fd N`): the agent of one training process that has
// no shared agent (none could be reached, or COHORT_AGENT=private). The client library starts it
// over a socketpair (client/spawn.h SpawnPrivateAgent) and speaks the same protocol on it; it is
// the same code as the shared agent (Ingest, WAL, Sender) in its own process, with no socket to
// listen on, no agent.lock and no other writer's WAL. When its connection ends after the
// client's finish, or because the client is gone, it finishes the uploads (at most
// pending_linger_s) and exits; when the client lives but dropped the connection without
// finishing (it is opening its writer again on a new private agent) it lets go of the writer's
// WAL at once. Returns the process exit code.
int RunPrivateAgent(const AgentOptions& options);

}  // namespace cohort::agent
