// `cohort keys create|list|revoke`: manage API keys directly in a server's store (run on the
// server machine; remote admins use the /api/v1/keys routes).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/user_config.h"
#include "server/api/auth.h"
#include "store/store.h"

namespace cohort::cli {

Runner AddKeysCommand(CLI::App& app) {
  struct Opts {
    // Each subcommand has its own: CLI11 reads the environment into the options of the
    // subcommands not run as well, which would overwrite the --store given to the one run.
    struct Where {
      std::string data_dir, store_url;
    };
    Where create, list, revoke;
    std::string entity, name = "key", role = "member";
    int64_t id = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("keys", "Manage API keys in a server's store");
  cmd->require_subcommand(1);
  auto add_store_opts = [&](CLI::App* sub, Opts::Where* where) {
    sub->add_option("--data-dir", where->data_dir, "Server data directory")
        ->envname("COHORT_DATA_DIR");
    sub->add_option("--store", where->store_url, "Store URL (overrides --data-dir)")
        ->envname("COHORT_STORE");
  };
  auto* create = cmd->add_subcommand("create", "Create a key and print it (shown only once)");
  add_store_opts(create, &o->create);
  create->add_option("--entity", o->entity, "Entity the key belongs to")->required();
  create->add_option("--name", o->name, "A name to recognise the key")->capture_default_str();
  create->add_option("--role", o->role, "admin or member")
      ->check(CLI::IsMember({"admin", "member"}))
      ->capture_default_str();
  auto* list = cmd->add_subcommand("list", "List the keys of an entity");
  add_store_opts(list, &o->list);
  list->add_option("--entity", o->entity, "Entity")->required();
  auto* revoke = cmd->add_subcommand("revoke", "Revoke a key by id");
  add_store_opts(revoke, &o->revoke);
  revoke->add_option("--entity", o->entity, "Entity")->required();
  revoke->add_option("id", o->id, "Key id (from `cohort keys list`)")->required();

  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    const Opts::Where& where = create->parsed() ? o->create : list->parsed() ? o->list : o->revoke;
    std::string url = where.store_url;
    if (url.empty()) {
      std::string dir = where.data_dir.empty() ? UserDataDir() + "/server" : where.data_dir;
      url = "sqlite://" + dir + "/cohort.db";
    }
    if (!ids::IsValidId(o->entity)) {
      std::fprintf(stderr, "cohort keys: invalid entity name '%s'\n", o->entity.c_str());
      return 2;
    }
    // The servers' store: a mistyped --data-dir must not make a new one whose keys no server
    // accepts.
    auto store = store::OpenExistingStore(url, "cohort keys");
    if (!store.ok()) {
      std::fprintf(stderr, "cohort keys: %s\n", store.status().ToString().c_str());
      return 1;
    }
    if (create->parsed()) {
      std::string secret = api::NewApiKeySecret();
      store::ApiKeyRecord rec;
      rec.entity = o->entity;
      rec.name = o->name;
      rec.role = o->role == "admin" ? store::KeyRole::kAdmin : store::KeyRole::kMember;
      rec.hash = api::HashApiKey(secret);
      rec.prefix = secret.substr(0, 7);
      rec.created_ms = NowMillis();
      auto created = (*store)->CreateApiKey(rec);
      if (!created.ok()) {
        std::fprintf(stderr, "cohort keys: %s\n", created.status().ToString().c_str());
        return 1;
      }
      std::printf("%s\n", secret.c_str());
      return 0;
    }
    if (list->parsed()) {
      auto keys = (*store)->ListApiKeys(o->entity);
      if (!keys.ok()) {
        std::fprintf(stderr, "cohort keys: %s\n", keys.status().ToString().c_str());
        return 1;
      }
      std::printf("%-6s %-20s %-7s %-9s %s\n", "ID", "NAME", "ROLE", "PREFIX", "STATE");
      for (const auto& k : *keys) {
        std::printf("%-6lld %-20s %-7s %-9s %s\n", static_cast<long long>(k.id), k.name.c_str(),
                    k.role == store::KeyRole::kAdmin ? "admin" : "member", k.prefix.c_str(),
                    k.revoked ? "revoked" : "active");
      }
      return 0;
    }
    Status s = (*store)->RevokeApiKey(o->entity, o->id);
    if (!s.ok()) {
      std::fprintf(stderr, "cohort keys: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("revoked key %lld\n", static_cast<long long>(o->id));
    return 0;
  };
}

}  // namespace cohort::cli
