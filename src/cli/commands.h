// Subcommands of the `cohort` binary; each file adds one to the CLI11 app and runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace cohort::blob {
struct S3Config;
}

namespace cohort::cli {

// Each Add* registers a subcommand; the returned function runs it (after parsing) and gives
// the process exit code.
using Runner = std::function<int()>;

// An option check with a short message ("expected a number >= 0, got -5"; CLI11's own print
// the whole range of a double): numbers above 0, or from 0 on when `zero` is allowed.
inline CLI::Validator NumberFromZero(bool zero) {
  const std::string want = zero ? "a number >= 0" : "a number > 0";
  return CLI::Validator(
      [zero, want](std::string& v) -> std::string {
        double d = 0;
        try {
          d = std::stod(v);
        } catch (...) {
          return "expected " + want + ", got " + v;
        }
        return d > 0 || (zero && d == 0) ? std::string() : "expected " + want + ", got " + v;
      },
      zero ? "NUMBER >= 0" : "NUMBER > 0");
}
inline const CLI::Validator kNotNegative = NumberFromZero(true);
inline const CLI::Validator kPositive = NumberFromZero(false);

Runner AddServerCommand(CLI::App& app);
Runner AddLoginCommand(CLI::App& app);
Runner AddLoginLinkCommand(CLI::App& app);  // in login_cmd.cc
Runner AddKeysCommand(CLI::App& app);
Runner AddAgentCommand(CLI::App& app);
Runner AddSyncCommand(CLI::App& app);
Runner AddRunsCommand(CLI::App& app);         // runs ls | show | export
Runner AddRunsExportCommand(CLI::App& runs);  // `runs export`, under the `runs` command
Runner AddLogsCommand(CLI::App& app);
Runner AddMediaCommand(CLI::App& app);       // media ls | get
Runner AddArtifactCommand(CLI::App& app);    // artifact ls | show | get | put
Runner AddAlertsCommand(CLI::App& app);      // alerts ls | ack
Runner AddGcCommand(CLI::App& app);          // gc: unreferenced artifact files
Runner AddStoreDumpCommands(CLI::App& app);  // export | import | migrate (whole store)
// Builds without the server (the wheels' node binary): `server`, `keys`, `gc`, `export`,
// `import` and `migrate` exit 2 saying that this binary has no server and where to get one.
Runner AddNoServerCommands(CLI::App& app);  // in no_server_cmd.cc

// Adds the S3 blob store's options (--blob-s3-*, credentials from the environment) to `cmd`
// (`cohort server` and `cohort gc`; in server_cmd.cc).
void AddBlobS3Options(CLI::App* cmd, blob::S3Config* s3);

}  // namespace cohort::cli
