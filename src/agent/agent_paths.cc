#include "agent/agent_paths.h"

#include <unistd.h>

#include <cstdlib>

#include "core/user_config.h"

namespace cohort::agent {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

AgentPaths AgentPathsFor(const std::string& socket_path) {
  AgentPaths p;
  p.socket = socket_path;
  size_t slash = socket_path.rfind('/');
  p.dir = slash == std::string::npos ? "." : socket_path.substr(0, slash);
  p.lock = p.dir + "/agent.lock";
  p.log = DefaultAgentDataDir() + "/agent.log";
  return p;
}

AgentPaths DefaultAgentPaths() {
  if (std::string s = Env("COHORT_AGENT_SOCKET"); !s.empty()) return AgentPathsFor(s);
  std::string dir;
  if (std::string x = Env("XDG_RUNTIME_DIR"); !x.empty()) {
    dir = x + "/cohort";
  } else {
    dir = "/tmp/cohort-" + std::to_string(getuid());
  }
  return AgentPathsFor(dir + "/agent.sock");
}

std::string DefaultAgentDataDir() {
  if (std::string d = Env("COHORT_DIR"); !d.empty()) return d;
  return UserDataDir() + "/agent";
}

}  // namespace cohort::agent
