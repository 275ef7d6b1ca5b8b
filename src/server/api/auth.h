// Authenticator: resolves the API key of a request to the entity and role it grants.
//
// Keys look like "ck_<40 hex>"; the store keeps only their SHA-256 (hex). Accepts
// "Authorization: Bearer <key>" and "Authorization: Basic base64(api:<key>)" (the form W&B
// clients send). Lookups are cached for a few seconds so that a busy ingest path does not hit
// the store per request; revocation takes effect within that time.
//
// Threading: thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cohort/status.h"
#include "server/http/message.h"
#include "store/store.h"

namespace cohort::api {

struct AuthContext {
  std::string entity;
  store::KeyRole role = store::KeyRole::kMember;
  std::string key_name;
  int64_t key_id = 0;
};

// Hex SHA-256 of a key's secret.
std::string HashApiKey(std::string_view key);
// A new random key secret "ck_<40 hex>".
std::string NewApiKeySecret();

class Authenticator {
 public:
  explicit Authenticator(store::MetaStore* store, int cache_seconds = 5);

  Result<AuthContext> Authenticate(const http::HttpRequest& req);
  // Drops cached lookups (after a revocation through this server).
  void Invalidate();

  // Browser sessions: in-memory secrets handed out in exchange for the server's UI token
  // (printed at start, like Jupyter's), valid until the server stops.
  void SetUiToken(std::string token, AuthContext ctx);
  const std::string& ui_token() const { return ui_token_; }
  // Returns a new session secret when `token` is the UI token.
  Result<std::string> OpenSession(std::string_view token);

 private:
  struct Entry {
    AuthContext ctx;
    std::chrono::steady_clock::time_point expires;
  };
  store::MetaStore* store_;
  std::chrono::seconds ttl_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_;  // hash -> entry
  std::string ui_token_;
  AuthContext ui_ctx_;
  std::unordered_map<std::string, AuthContext> sessions_;  // hash of session secret -> ctx
};

// The key in a request's Authorization header, or empty.
std::string ExtractApiKey(const http::HttpRequest& req);

}  // namespace cohort::api
