// For tests of the client library: an isolated client environment in a temporary directory, and
// the stopping of the agents (the shared one and the private ones, `cohort agent --private`) that
// runs of a test started, so that none outlives the test (a private agent keeps uploading after
// its client exits, up to an hour when the server is down) or deletes files while the test
// removes its temporary directory. Header-only.
#pragma once

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace cohort::client::testing {

// The `agent --private` processes whose environment has COHORT_DIR=`data_dir` (a private
// agent's data dir is its client's).
inline std::vector<int> PrivateAgentPids(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::vector<int> out;
  const std::string marker = "COHORT_DIR=" + data_dir + '\0';
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // A process that exits while its /proc files are read makes read(2) fail with ESRCH, which
    // libstdc++'s filebuf throws as std::ios_base::failure: such a process is no agent to stop.
    auto read = [&](const char* file) {
      try {
        std::ifstream in(entry.path() / file);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      } catch (const std::ios_base::failure&) {
        return std::string();
      }
    };
    if (read("cmdline").find("--private") == std::string::npos) continue;
    if (read("environ").find(marker) == std::string::npos) continue;
    out.push_back(std::stoi(name));
  }
  return out;
}

// SIGTERMs the processes and waits (at most 5 s) until each is gone.
inline void StopAndWait(const std::vector<int>& pids) {
  for (int pid : pids) kill(pid, SIGTERM);
  for (int pid : pids) {
    for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Makes a fresh directory from `mkdtemp_template` (e.g. "/tmp/cohort-run-XXXXXX") the client's
// whole world: HOME, the agent socket under sock/, the data dir data/, the stand-in agent binary
// `agent_bin`, an agent that exits 3 s after its last client; no COHORT_* or launcher variable
// from the caller's environment. Returns the directory.
inline std::string IsolateClientEnvironment(std::string mkdtemp_template, const char* agent_bin) {
  const std::string root = mkdtemp(mkdtemp_template.data());
  setenv("HOME", root.c_str(), 1);
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("XDG_DATA_HOME");
  for (const char* v :
       {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_ENTITY", "COHORT_PROJECT", "COHORT_RUN_ID",
        "COHORT_MODE", "COHORT_AGENT", "RANK", "TORCHELASTIC_RUN_ID"}) {
    unsetenv(v);
  }
  setenv("COHORT_AGENT_SOCKET", (root + "/sock/agent.sock").c_str(), 1);
  setenv("COHORT_DIR", (root + "/data").c_str(), 1);
  setenv("COHORT_BIN", agent_bin, 1);
  setenv("COHORT_AGENT_IDLE_S", "3", 1);
  return root;
}

// The pid of the shared agent of an environment made by IsolateClientEnvironment (0 when none
// runs).
inline int SharedAgentPid(const std::string& root) {
  std::ifstream in(root + "/sock/agent.lock");
  int pid = 0;
  in >> pid;
  return pid > 0 && kill(pid, 0) == 0 ? pid : 0;
}

// Stops every agent (shared and private) of an environment made by IsolateClientEnvironment.
inline void StopAgents(const std::string& root) {
  std::vector<int> agents = PrivateAgentPids(root + "/data");
  if (int pid = SharedAgentPid(root); pid > 0) agents.push_back(pid);
  StopAndWait(agents);
}

// StopAgents, then removes the environment.
inline void StopAgentsAndRemove(const std::string& root) {
  StopAgents(root);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

}  // namespace cohort::client::testing
