// `cohort login`: store a server URL and API key for clients on this account.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/user_config.h"

namespace cohort::cli {

Runner AddLoginCommand(CLI::App& app) {
  struct Opts {
    std::string host = "http://127.0.0.1:8787";
    std::string key;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("login", "Save the server URL and API key for this account");
  cmd->add_option("key", o->key, "API key (ck_...); read from stdin when omitted");
  cmd->add_option("--host", o->host, "Server URL")->capture_default_str();
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    if (o->key.empty()) {
      std::fprintf(stderr, "API key: ");
      std::getline(std::cin, o->key);
    }
    if (o->key.rfind("ck_", 0) != 0) {
      std::fprintf(stderr, "cohort login: that does not look like a Cohort key (ck_...)\n");
      return 2;
    }
    while (!o->host.empty() && o->host.back() == '/') o->host.pop_back();
    Status s = SaveUserConfig({o->host, o->key});
    if (!s.ok()) {
      std::fprintf(stderr, "cohort login: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("Saved to %s\n", UserConfigPath().c_str());
    return 0;
  };
}

}  // namespace cohort::cli
