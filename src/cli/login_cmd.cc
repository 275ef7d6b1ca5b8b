// `cohort login`: store a server URL and API key for clients on this account.
// `cohort login-link`: a one-time link that signs a browser in to the web UI.
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/read_client.h"
#include "core/user_config.h"

namespace cohort::cli {

namespace {

// A line of stdin; on a terminal without echoing it (the key is a secret).
std::string ReadSecretLine() {
  termios saved{};
  const bool tty = ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~tcflag_t(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    std::fprintf(stderr, "\n");
  }
  return line;
}

}  // namespace

Runner AddLoginCommand(CLI::App& app) {
  struct Opts {
    std::string host;
    std::string key;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("login", "Save the server URL and API key for this account");
  cmd->add_option("key", o->key, "API key (ck_...); read from stdin when omitted");
  cmd->add_option("--host", o->host,
                  "Server URL (default: the one saved before, else http://127.0.0.1:8787)");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    if (o->host.empty()) {  // a new key for the server saved before, not for localhost
      Result<UserConfig> saved = LoadUserConfig();
      o->host = saved.ok() && !saved->base_url.empty() ? saved->base_url
                                                       : std::string("http://127.0.0.1:8787");
    }
    // A URL without a scheme was saved as it was: the links printed later were not clickable,
    // and the clients could not reach the server with it.
    if (!o->host.starts_with("http://") && !o->host.starts_with("https://")) {
      std::string example = o->host;
      if (const size_t sep = example.find("://"); sep != std::string::npos) {
        example = example.substr(sep + 3);
      }
      std::fprintf(stderr,
                   "cohort login: --host %s is not a URL: give it with http:// or https://, e.g. "
                   "--host http://%s\n",
                   o->host.c_str(), example.empty() ? "127.0.0.1:8787" : example.c_str());
      return 2;
    }
    if (o->key.empty()) {
      std::fprintf(stderr, "API key: ");
      o->key = ReadSecretLine();
    }
    if (o->key.rfind("ck_", 0) != 0) {
      std::fprintf(stderr, "cohort login: that does not look like a Cohort key (ck_...)\n");
      return 2;
    }
    while (!o->host.empty() && o->host.back() == '/') o->host.pop_back();
    // The key is checked where it will be used: a refused key is not saved; a server that cannot
    // be reached now (a client set up before the server, a balancer not up yet) is said, and the
    // key saved.
    Result<std::string> entity = ReadClient::To(o->host, o->key)->Entity();
    if (!entity.ok()) {
      const StatusCode code = entity.status().code();
      if (code == StatusCode::kUnauthenticated || code == StatusCode::kPermissionDenied) {
        std::fprintf(stderr, "cohort login: %s refused this key: %s (nothing saved)\n",
                     o->host.c_str(), entity.status().message().c_str());
        return 1;
      }
      std::fprintf(stderr, "cohort login: could not check the key (%s); saving it anyway\n",
                   entity.status().message().c_str());
    }
    Status s = SaveUserConfig({o->host, o->key});
    if (!s.ok()) {
      std::fprintf(stderr, "cohort login: %s\n", s.ToString().c_str());
      return 1;
    }
    if (entity.ok()) {
      std::printf("Logged in to %s as %s; saved to %s\n", o->host.c_str(), entity->c_str(),
                  UserConfigPath().c_str());
    } else {
      std::printf("Saved %s to %s\n", o->host.c_str(), UserConfigPath().c_str());
    }
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
