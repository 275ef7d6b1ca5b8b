// The server's commands in a build without the server (COHORT_BUILD_SERVER=OFF: the `cohort`
// binary of the Python wheels, which training nodes install): each one exits 2 and says where a
// server comes from, instead of CLI11's bare "unknown subcommand".
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace cohort::cli {

Runner AddNoServerCommands(CLI::App& app) {
  auto chosen = std::make_shared<std::string>();
  std::vector<CLI::App*> cmds;
  for (const char* name : {"server", "keys", "gc", "export", "import", "migrate"}) {
    auto* cmd = app.add_subcommand(name, "(not in this build: the server's command)");
    cmd->allow_extras();
    cmd->group("");  // hidden from --help: this binary has no server
    cmd->callback([chosen, name] { *chosen = name; });
    cmds.push_back(cmd);
  }
  return [chosen]() -> int {
    if (chosen->empty()) return -1;
    std::fprintf(stderr,
                 "cohort %s: this `cohort` binary is the node build that comes with the Python "
                 "package (agent, sync, login, runs, logs, media, artifact); it has no server. "
                 "Run `cohort %s` where the server is installed: built from source (README, "
                 "Quick start; docs/operations.md).\n",
                 chosen->c_str(), chosen->c_str());
    return 2;
  };
}

}  // namespace cohort::cli
