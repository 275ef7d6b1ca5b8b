#include "server/api/auth.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace cohort::api {
namespace {

http::HttpRequest WithAuth(std::string value) {
  http::HttpRequest req;
  req.headers.emplace_back("authorization", std::move(value));
  return req;
}

TEST(ExtractApiKey, ReadsBearer) {
  EXPECT_EQ(ExtractApiKey(WithAuth("Bearer ck_abc")), "ck_abc");
}

TEST(ExtractApiKey, ReadsBasicWithApiUser) {
  // base64("api:ck_abc")
  EXPECT_EQ(ExtractApiKey(WithAuth("Basic YXBpOmNrX2FiYw==")), "ck_abc");
}

TEST(ExtractApiKey, MissingHeaderGivesEmpty) { EXPECT_EQ(ExtractApiKey(http::HttpRequest{}), ""); }

TEST(HashApiKey, IsHexSha256AndNotTheKey) {
  std::string h = HashApiKey("abc");
  EXPECT_EQ(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(NewApiKeySecret, HasPrefixAndLength) {
  std::string k = NewApiKeySecret();
  EXPECT_EQ(k.rfind("ck_", 0), 0u);
  EXPECT_EQ(k.size(), 43u);
  EXPECT_NE(k, NewApiKeySecret());
}

// A MetaStore that knows API keys and sessions by hash (ids are all 1). The next lookup can be
// held inside the store until released: a lookup that read the store before a revocation or a
// logout and answers after it.
class FakeKeyStore : public store::MetaStore {
 public:
  void AddKey(const std::string& secret) { Set(&keys_, HashApiKey(secret), true); }
  void RevokeKey(const std::string& secret) { Set(&keys_, HashApiKey(secret), false); }
  void AddSession(const std::string& secret) { Set(&sessions_, HashApiKey(secret), true); }

  // The next lookup reads the store, then waits in it until Release().
  void HoldNextLookup() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void WaitUntilHeld() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return held_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    hold_ = held_ = false;
    cv_.notify_all();
  }

  Result<store::ApiKeyRecord> FindApiKey(const std::string& hash) override {
    return Lookup(keys_, hash);
  }
  Result<store::ApiKeyRecord> FindSession(const std::string& hash, int64_t) override {
    return Lookup(sessions_, hash);
  }
  Status DeleteSession(const std::string& hash) override {
    std::lock_guard lock(mu_);
    return sessions_.erase(hash) ? Status::Ok() : Status::NotFound("no session");
  }

  Result<store::ViewRecord> CreateView(const store::ViewRecord&) override { return No(); }
  Result<std::vector<store::ViewRecord>> ListViews(const std::string&,
                                                   const std::string&) override {
    return No();
  }
  Result<store::ViewRecord> UpdateView(const store::ViewRecord&) override { return No(); }
  Status DeleteView(const std::string&, const std::string&, int64_t) override { return No(); }
  Result<store::ApiKeyRecord> CreateApiKey(const store::ApiKeyRecord&) override { return No(); }
  Result<std::vector<store::ApiKeyRecord>> ListApiKeys(const std::string&) override { return No(); }
  Status RevokeApiKey(const std::string&, int64_t) override { return No(); }
  Result<int64_t> CountApiKeys(bool) override { return No(); }
  Result<std::optional<store::ApiKeyRecord>> CreateFirstApiKey(
      const store::ApiKeyRecord&) override {
    return No();
  }
  Status CreateSession(const store::SessionRecord&) override { return No(); }
  Result<store::ApiKeyRecord> RedeemLoginToken(const std::string&, const store::SessionRecord&,
                                               int64_t) override {
    return No();
  }
  Result<int64_t> PruneSessions(int64_t) override { return No(); }
  Result<store::RunFile> PutRunFile(const store::RunRef&, const store::RunFile&) override {
    return No();
  }
  Result<std::vector<store::RunFile>> ListRunFiles(const store::RunRef&) override { return No(); }
  Result<store::RunFile> GetRunFile(const store::RunRef&, const std::string&) override {
    return No();
  }

 private:
  static Status No() { return Status::Internal("not in the fake"); }
  void Set(std::set<std::string>* set, const std::string& hash, bool present) {
    std::lock_guard lock(mu_);
    if (present) {
      set->insert(hash);
    } else {
      set->erase(hash);
    }
  }
  Result<store::ApiKeyRecord> Lookup(const std::set<std::string>& set, const std::string& hash) {
    std::unique_lock lock(mu_);
    const bool found = set.contains(hash);
    if (hold_) {
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return !hold_; });
    }
    if (!found) return Status::NotFound("no such key");
    store::ApiKeyRecord rec;
    rec.id = 1;
    rec.entity = "alice";
    rec.name = "k";
    return rec;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> keys_, sessions_;
  bool hold_ = false, held_ = false;
};

TEST(Authenticator, CachesLookups) {
  FakeKeyStore store;
  Authenticator auth(&store, /*cache_seconds=*/60);
  const std::string key = "ck_" + std::string(40, 'a');
  store.AddKey(key);
  ASSERT_TRUE(auth.Authenticate(WithAuth("Bearer " + key)).ok());
  store.RevokeKey(key);  // elsewhere: this server still has it cached
  EXPECT_TRUE(auth.Authenticate(WithAuth("Bearer " + key)).ok());
  auth.Invalidate();
  EXPECT_EQ(auth.Authenticate(WithAuth("Bearer " + key)).status().code(),
            StatusCode::kUnauthenticated);
}

// A request whose lookup read the key before it was revoked (through this server) answers as it
// read, but does not cache the key: the next request is refused at once.
TEST(Authenticator, LookupInFlightDuringRevocationIsNotCached) {
  FakeKeyStore store;
  Authenticator auth(&store, /*cache_seconds=*/60);
  const std::string key = "ck_" + std::string(40, 'b');
  store.AddKey(key);
  store.HoldNextLookup();
  std::thread in_flight([&] { EXPECT_TRUE(auth.Authenticate(WithAuth("Bearer " + key)).ok()); });
  store.WaitUntilHeld();
  store.RevokeKey(key);
  auth.Invalidate();  // what DELETE /api/v1/keys/{id} does after the store revoked the key
  store.Release();
  in_flight.join();
  EXPECT_EQ(auth.Authenticate(WithAuth("Bearer " + key)).status().code(),
            StatusCode::kUnauthenticated);
}

TEST(Authenticator, LookupInFlightDuringLogoutIsNotCached) {
  FakeKeyStore store;
  Authenticator auth(&store, /*cache_seconds=*/60);
  const std::string session = "cs_" + std::string(40, 'c');
  store.AddSession(session);
  store.HoldNextLookup();
  std::thread in_flight(
      [&] { EXPECT_TRUE(auth.Authenticate(WithAuth("Bearer " + session)).ok()); });
  store.WaitUntilHeld();
  EXPECT_TRUE(auth.CloseSession(WithAuth("Bearer " + session)).ok());
  store.Release();
  in_flight.join();
  EXPECT_EQ(auth.Authenticate(WithAuth("Bearer " + session)).status().code(),
            StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace cohort::api
