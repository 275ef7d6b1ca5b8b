// `cohort agent` (the node agent; normally spawned by the first client) and `cohort sync`
// (upload offline or leftover runs).
#include <cstdio>
#include <memory>

#include "agent/agent.h"
#include "agent/sync.h"
#include "cli/commands.h"

namespace cohort::cli {

Runner AddAgentCommand(CLI::App& app) {
  auto o = std::make_shared<agent::AgentOptions>(agent::AgentOptionsFromEnv());
  auto* cmd = app.add_subcommand(
      "agent", "Run the node agent (clients spawn it on demand; you rarely start it by hand)");
  cmd->add_option("--socket", o->socket_path, "Unix socket path (default: per-user runtime dir)");
  cmd->add_option("--data-dir", o->data_dir, "Where write-ahead logs of runs are kept");
  cmd->add_option("--idle-exit", o->idle_exit_s,
                  "Exit after this many seconds with no client and nothing to upload")
      ->capture_default_str()
      ->check(kNotNegative);
  cmd->add_flag("--verbose", o->verbose, "Debug lines in the agent log");
  auto private_mode = std::make_shared<bool>(false);
  auto* fd = cmd->add_option("--fd", o->private_fd,
                             "With --private: the descriptor of the one client connection");
  auto* priv = cmd->add_flag("--private", *private_mode,
                             "The agent of one training process (its client starts it)");
  priv->needs(fd);
  fd->needs(priv);
  return [cmd, o, private_mode]() -> int {
    if (!cmd->parsed()) return -1;
    return agent::RunAgent(*o);
  };
}

Runner AddSyncCommand(CLI::App& app) {
  struct Opts {
    std::vector<std::string> paths;
    agent::SyncOptions sync;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "sync", "Upload offline runs (or anything an agent left behind), exactly once");
  cmd->add_option("paths", o->paths,
                  "Writer, run or data directories (default: the agent's data directory)");
  cmd->add_option("--host", o->sync.base_url, "Upload to this server instead of the recorded one");
  cmd->add_option("--key", o->sync.api_key, "Use this API key instead of the recorded one");
  cmd->add_option("--give-up-after", o->sync.give_up_after_s,
                  "Seconds to keep retrying an unreachable server (0: for ever)")
      ->capture_default_str()
      ->check(kNotNegative);
  cmd->add_flag("--quiet", o->quiet, "No progress bar");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    o->sync.progress = !o->quiet;
    auto report = agent::RunSync(o->paths, o->sync);
    if (!report.ok()) {
      std::fprintf(stderr, "cohort sync: %s\n", report.status().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "cohort sync: %d writer(s), %d uploaded, %lld record(s), %lld point(s)\n",
                 report->writers, report->uploaded, static_cast<long long>(report->records),
                 static_cast<long long>(report->points));
    for (const auto& e : report->errors) std::fprintf(stderr, "cohort sync: %s\n", e.c_str());
    return report->errors.empty() ? 0 : 1;
  };
}

}  // namespace cohort::cli
