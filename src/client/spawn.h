// Starting agents on demand: find the `cohort` binary, launch `cohort agent` detached from the
// training process (posix_spawn + exec, a new session, no inherited descriptors; never a bare
// fork of the training process), and wait, bounded, until its socket answers; or launch a
// private agent (`cohort agent --private --fd 3`) for this process alone, over a socketpair.
// Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agent/agent_paths.h"
#include "client/transport.h"

namespace cohort::client {

// The cohort binary: $COHORT_BIN; else "cohort" in the directory of the executable or shared
// object that contains this library (and ../bin/ of it); else the first "cohort" on $PATH.
// kNotFound when none is executable.
Result<std::string> FindCohortBinary();

// Launches `binary agent` so that it outlives this process: environment as ours plus
// COHORT_AGENT_SOCKET / COHORT_DIR (so it serves this socket and resumes this data dir) and
// COHORT_AGENT_DETACH=1 (it forks away and its first process exits at once, which this reaps).
Status SpawnAgent(const std::string& binary, const agent::AgentPaths& paths,
                  const std::string& data_dir);

// Launches a private agent for this process (agent/agent.h RunPrivateAgent): `binary agent
// --private --fd 3`, its descriptor 3 one end of a new socketpair, in a new session (it outlives
// this process to finish its uploads), stdio on /dev/null and <data_dir>/agent.log, with
// COHORT_DIR=data_dir. Returns this process's end of the socketpair (close-on-exec). The child
// is reaped off this thread when it exits.
Result<int> SpawnPrivateAgent(const std::string& binary, const std::string& data_dir);

// FindCohortBinary + SpawnPrivateAgent + the protocol's hello, before `deadline_ms`
// (agent::MonoMillis clock). An error names what to set when no binary can be found.
Result<std::unique_ptr<AgentTransport>> StartPrivateAgent(const std::string& data_dir,
                                                          int64_t deadline_ms);

// Connects to the agent at `paths`; when nobody answers and `allow_spawn`, spawns one and
// retries until `deadline_ms` (agent::MonoMillis clock).
Result<std::unique_ptr<AgentTransport>> ConnectOrSpawnAgent(const agent::AgentPaths& paths,
                                                            const std::string& data_dir,
                                                            bool allow_spawn, int64_t deadline_ms);

}  // namespace cohort::client
