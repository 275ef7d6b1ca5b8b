// Authenticator: resolves the API key of a request to the entity and role it grants.
//
// Keys look like "ck_<40 hex>"; the store keeps only their SHA-256 (hex). Accepts
// "Authorization: Bearer <key>" and "Authorization: Basic base64(api:<key>)" (the form W&B
// clients send). Lookups are cached for a few seconds so that a busy ingest path does not hit
// the store per request; revocation takes effect within that time (at once on the server that
// revoked).
//
// Browser sessions ("cs_<40 hex>") come from one-time login tokens: a token is made for an API
// key (at server start for the admin key, or by POST /api/v1/login-tokens), used once within
// kLoginTokenLifetime, and exchanged for a session that acts for the same key until
// kSessionLifetime has passed, the session is ended (logout) or the key is revoked. Tokens and
// sessions live in the store (hashed), so every server sharing it accepts them.
//
// Threading: thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>

#include "cohort/status.h"
#include "core/mutex.h"
#include "server/http/message.h"
#include "store/store.h"

namespace cohort::api {

struct AuthContext {
  std::string entity;
  store::KeyRole role = store::KeyRole::kMember;
  std::string key_name;
  int64_t key_id = 0;    // the API key (a session's: the key it acts for)
  bool session = false;  // a browser session, not the key itself
};

// How long a login token may wait to be used, and how long a session lasts.
inline constexpr std::chrono::minutes kLoginTokenLifetime{15};
inline constexpr std::chrono::hours kSessionLifetime{24 * 7};

// Hex SHA-256 of a key's secret.
std::string HashApiKey(std::string_view key);
// A new random key secret "ck_<40 hex>".
std::string NewApiKeySecret();

class Authenticator {
 public:
  explicit Authenticator(store::MetaStore* store, int cache_seconds = 5);

  Result<AuthContext> Authenticate(const http::HttpRequest& req) COHORT_EXCLUDES(mu_);
  // Drops cached lookups (after a revocation through this server).
  void Invalidate() COHORT_EXCLUDES(mu_);

  // A new one-time login token for API key `key_id` (which must not be revoked); returns the
  // token's secret.
  Result<std::string> CreateLoginToken(int64_t key_id);
  // Uses up the login token `token` and returns the secret of a new session for its key;
  // kUnauthenticated when the token is unknown, used or expired.
  Result<std::string> OpenSession(std::string_view token);
  // Ends the session whose secret the request carries (logout); kInvalidArgument when it
  // carries an API key instead, kUnauthenticated when no live session.
  Status CloseSession(const http::HttpRequest& req) COHORT_EXCLUDES(mu_);

 private:
  struct Entry {
    AuthContext ctx;
    std::chrono::steady_clock::time_point expires;
  };
  store::MetaStore* store_;
  std::chrono::seconds ttl_;
  Mutex mu_;
  // Hash of a key or session secret -> entry.
  std::unordered_map<std::string, Entry> cache_ COHORT_GUARDED_BY(mu_);
  // Moved on by Invalidate and CloseSession: a lookup read from the store before one of them
  // is not cached after it (it could bring a revoked key or an ended session back).
  uint64_t generation_ COHORT_GUARDED_BY(mu_) = 0;
};

// Whether a secret is a browser session's (by its prefix).
bool IsSessionSecret(std::string_view secret);

// The key in a request's Authorization header, or empty.
std::string ExtractApiKey(const http::HttpRequest& req);

}  // namespace cohort::api
