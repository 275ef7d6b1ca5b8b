#include "server/api/auth.h"

#include <openssl/evp.h>

#include "core/clock.h"
#include "core/ids.h"
#include "core/text_encoding.h"

namespace cohort::api {

std::string HashApiKey(std::string_view key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(key.data(), key.size(), md, &len, EVP_sha256(), nullptr);
  return HexLower(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string NewApiKeySecret() { return "ck_" + ids::RandomHex(20); }

std::string ExtractApiKey(const http::HttpRequest& req) {
  std::string_view h = req.Header("authorization");
  auto starts = [&](std::string_view p) {
    if (h.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(h[i])) != p[i]) return false;
    }
    return true;
  };
  if (starts("bearer ")) {
    std::string_view k = h.substr(7);
    while (!k.empty() && k.front() == ' ') k.remove_prefix(1);
    return std::string(k);
  }
  if (starts("basic ")) {
    std::string decoded = Base64Decode(h.substr(6));
    auto colon = decoded.find(':');
    if (colon == std::string::npos) return {};
    return decoded.substr(colon + 1);
  }
  return {};
}

bool IsSessionSecret(std::string_view secret) { return secret.starts_with("cs_"); }

Authenticator::Authenticator(store::MetaStore* store, int cache_seconds)
    : store_(store), ttl_(cache_seconds) {}

Result<AuthContext> Authenticator::Authenticate(const http::HttpRequest& req) {
  std::string key = ExtractApiKey(req);
  if (key.empty()) {
    return Status::Unauthenticated(
        "missing API key: send 'Authorization: Bearer <key>' (see `cohort login`)");
  }
  if (key.size() > 256) return Status::Unauthenticated("invalid API key");
  std::string hash = HashApiKey(key);
  auto now = std::chrono::steady_clock::now();
  uint64_t generation;
  {
    MutexLock lock(&mu_);
    auto it = cache_.find(hash);
    if (it != cache_.end() && it->second.expires > now) return it->second.ctx;
    generation = generation_;
  }
  const bool session = IsSessionSecret(key);
  auto rec = session ? store_->FindSession(hash, NowMillis()) : store_->FindApiKey(hash);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      return Status::Unauthenticated(session ? "browser session expired, ended or revoked: "
                                               "open a new login link (`cohort login-link`)"
                                             : "invalid or revoked API key");
    }
    return rec.status();
  }
  AuthContext ctx{rec->entity, rec->role, session ? "browser-session" : rec->name, rec->id,
                  session};
  MutexLock lock(&mu_);
  if (generation != generation_) return ctx;  // revoked or logged out meanwhile: not cached
  if (cache_.size() > 10000) cache_.clear();
  cache_[hash] = Entry{ctx, now + ttl_};
  return ctx;
}

Result<std::string> Authenticator::CreateLoginToken(int64_t key_id) {
  const int64_t now = NowMillis();
  std::string secret = ids::RandomHex(20);
  store::SessionRecord token{
      .hash = HashApiKey(secret),
      .kind = store::SessionKind::kLoginToken,
      .key_id = key_id,
      .created_ms = now,
      .expires_ms =
          now + std::chrono::duration_cast<std::chrono::milliseconds>(kLoginTokenLifetime).count()};
  COHORT_RETURN_IF_ERROR(store_->CreateSession(token));
  return secret;
}

Result<std::string> Authenticator::OpenSession(std::string_view token) {
  if (token.empty() || token.size() > 256) {
    return Status::Unauthenticated("invalid login token: open the link `cohort server` printed");
  }
  const int64_t now = NowMillis();
  std::string secret = "cs_" + ids::RandomHex(20);
  store::SessionRecord session{
      .hash = HashApiKey(secret),
      .kind = store::SessionKind::kSession,
      .key_id = 0,  // the token's, set by RedeemLoginToken
      .created_ms = now,
      .expires_ms =
          now + std::chrono::duration_cast<std::chrono::milliseconds>(kSessionLifetime).count()};
  auto key = store_->RedeemLoginToken(HashApiKey(token), session, now);
  if (!key.ok()) {
    if (key.status().code() == StatusCode::kNotFound) {
      return Status::Unauthenticated(
          "login link unknown, already used or expired (links work once, for " +
          std::to_string(kLoginTokenLifetime.count()) +
          " minutes): make a new one with `cohort login-link`");
    }
    return key.status();
  }
  return secret;
}

Status Authenticator::CloseSession(const http::HttpRequest& req) {
  std::string secret = ExtractApiKey(req);
  if (!IsSessionSecret(secret)) {
    return Status::InvalidArgument("logout: the request carries no browser session");
  }
  std::string hash = HashApiKey(secret);
  Status s = store_->DeleteSession(hash);
  {
    // After the store forgot it: a lookup that read it before is not cached any more.
    MutexLock lock(&mu_);
    cache_.erase(hash);
    ++generation_;
  }
  if (s.code() == StatusCode::kNotFound) {
    return Status::Unauthenticated("browser session expired, ended or revoked");
  }
  return s;
}

void Authenticator::Invalidate() {
  MutexLock lock(&mu_);
  cache_.clear();
  ++generation_;
}

}  // namespace cohort::api
