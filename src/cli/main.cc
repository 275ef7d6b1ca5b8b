// The `cohort` binary: one executable, one subcommand per file in src/cli.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"Cohort: experiment tracking for distributed training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cohort " + std::string(cohort::kVersion));
  std::vector<cohort::cli::Runner> runners;
#if COHORT_WITH_SERVER
  runners.push_back(cohort::cli::AddServerCommand(app));
  runners.push_back(cohort::cli::AddKeysCommand(app));
  runners.push_back(cohort::cli::AddGcCommand(app));
  runners.push_back(cohort::cli::AddStoreDumpCommands(app));
#else
  runners.push_back(cohort::cli::AddNoServerCommands(app));
#endif
  runners.push_back(cohort::cli::AddLoginCommand(app));
  runners.push_back(cohort::cli::AddLoginLinkCommand(app));
  runners.push_back(cohort::cli::AddAgentCommand(app));
  runners.push_back(cohort::cli::AddSyncCommand(app));
  runners.push_back(cohort::cli::AddRunsCommand(app));
  runners.push_back(cohort::cli::AddLogsCommand(app));
  runners.push_back(cohort::cli::AddMediaCommand(app));
  runners.push_back(cohort::cli::AddArtifactCommand(app));
  runners.push_back(cohort::cli::AddAlertsCommand(app));
  // docs/cli.md "Exit codes": a command line that does not parse is exit code 2 (CLI11's own
  // codes, 105 to 109, said nothing to a script); --help and --version print and exit 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto& run : runners) {
    int rc = run();
    if (rc >= 0) return rc;
  }
  return 0;
}
