// Where the node agent lives on this machine: its socket, lock file and log, and the default
// data directory of writer WALs. One agent per machine and user. Thread-safe (reads the
// environment only).
#pragma once

#include <string>
#include <vector>

namespace cohort::agent {

struct AgentPaths {
  std::string dir;     // private (0700) directory of the socket and lock
  std::string socket;  // <dir>/agent.sock
  std::string lock;    // <dir>/agent.lock
  std::string log;     // agent log file (in the data dir: survives reboots, unlike dir)
};

// $COHORT_AGENT_SOCKET names the socket directly (its directory holds the lock); else
// $XDG_RUNTIME_DIR/cohort/agent.sock; else /tmp/cohort-<uid>/agent.sock.
AgentPaths DefaultAgentPaths();
// Paths around a given socket file.
AgentPaths AgentPathsFor(const std::string& socket_path);

// $COHORT_DIR, else $XDG_DATA_HOME/cohort/agent, else $HOME/.local/share/cohort/agent.
std::string DefaultAgentDataDir();

}  // namespace cohort::agent
