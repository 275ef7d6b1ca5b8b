// `cohort login`: store a server URL and API key for clients on this account.
// `cohort login-link`: a one-time link that signs a browser in to the web UI.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/read_client.h"
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

Runner AddLoginLinkCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "login-link",
      "Print a one-time link that signs a browser in to the web UI with this account's key "
      "(COHORT_BASE_URL / COHORT_API_KEY or the `cohort login` config); it works once, within "
      "15 minutes, on any server of the store");
  return [cmd]() -> int {
    if (!cmd->parsed()) return -1;
    auto client = ReadClient::Open();
    if (!client.ok()) {
      std::fprintf(stderr, "cohort login-link: %s\n", client.status().message().c_str());
      return 1;
    }
    auto made = (*client)->Post("/api/v1/login-tokens", boost::json::object{});
    if (!made.ok()) {
      std::fprintf(stderr, "cohort login-link: %s\n", made.status().message().c_str());
      return 1;
    }
    std::printf("%s%s\n", (*client)->base_url().c_str(), StrField(*made, "path").c_str());
    return 0;
  };
}

}  // namespace cohort::cli
