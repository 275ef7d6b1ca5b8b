// Conformance cases for browser sessions and one-time login tokens (Store::CreateSession and
// friends): single use, expiry, logout, revocation, pruning, persistence.
#include <atomic>
#include <thread>
#include <vector>

#include "store/store_conformance.h"

namespace cohort::store {
namespace {

constexpr int64_t kNow = 1'000'000;

SessionRecord Token(const std::string& hash, int64_t key_id, int64_t expires = kNow + 600'000) {
  return SessionRecord{.hash = hash,
                       .kind = SessionKind::kLoginToken,
                       .key_id = key_id,
                       .created_ms = kNow,
                       .expires_ms = expires};
}

SessionRecord Session(const std::string& hash, int64_t expires = kNow + 3'600'000) {
  return SessionRecord{
      .hash = hash, .kind = SessionKind::kSession, .created_ms = kNow, .expires_ms = expires};
}

}  // namespace

TEST_P(StoreConformanceTest, LoginTokenIsRedeemedOnceForASessionOfItsKey) {
  COHORT_ASSERT_OK_AND_ASSIGN(
      ApiKeyRecord key,
      store().CreateApiKey(ApiKeyRecord{
          .entity = kEntity, .name = "admin", .role = KeyRole::kAdmin, .hash = "key-hash"}));
  COHORT_ASSERT_OK(store().CreateSession(Token("token-1", key.id)));
  // A token is not a session.
  EXPECT_EQ(store().FindSession("token-1", kNow).status().code(), StatusCode::kNotFound);

  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord got,
                              store().RedeemLoginToken("token-1", Session("session-1"), kNow));
  EXPECT_EQ(got.id, key.id);
  EXPECT_EQ(got.entity, kEntity);
  EXPECT_EQ(got.role, KeyRole::kAdmin);
  // Used once: the second redemption fails and creates nothing.
  EXPECT_EQ(store().RedeemLoginToken("token-1", Session("session-2"), kNow).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().FindSession("session-2", kNow).status().code(), StatusCode::kNotFound);

  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord found, store().FindSession("session-1", kNow));
  EXPECT_EQ(found.id, key.id);
  Reopen();  // sessions live in the store
  COHORT_ASSERT_OK_AND_ASSIGN(found, store().FindSession("session-1", kNow + 1000));
  EXPECT_EQ(found.name, "admin");
}

TEST_P(StoreConformanceTest, ConcurrentRedemptionsOfOneTokenMakeOneSession) {
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord key,
                              store().CreateApiKey(ApiKeyRecord{.entity = kEntity, .hash = "k"}));
  COHORT_ASSERT_OK(store().CreateSession(Token("race", key.id)));
  constexpr int kCallers = 8;
  std::atomic<int> redeemed{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto r = store().RedeemLoginToken("race", Session("s" + std::to_string(i)), kNow);
      if (r.ok()) {
        ++redeemed;
      } else if (r.status().code() == StatusCode::kNotFound) {
        ++refused;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(redeemed.load(), 1);
  EXPECT_EQ(refused.load(), kCallers - 1);
}

TEST_P(StoreConformanceTest, ExpiredTokensAndSessionsAreRefusedAndPruned) {
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord key,
                              store().CreateApiKey(ApiKeyRecord{.entity = kEntity, .hash = "k"}));
  COHORT_ASSERT_OK(store().CreateSession(Token("old-token", key.id, kNow + 10)));
  EXPECT_EQ(store().RedeemLoginToken("old-token", Session("s"), kNow + 10).status().code(),
            StatusCode::kNotFound);
  SessionRecord session = Session("short", kNow + 100);
  session.key_id = key.id;
  COHORT_ASSERT_OK(store().CreateSession(session));
  COHORT_ASSERT_OK(store().FindSession("short", kNow + 99).status());
  EXPECT_EQ(store().FindSession("short", kNow + 100).status().code(), StatusCode::kNotFound);

  SessionRecord live = Session("live");
  live.key_id = key.id;
  COHORT_ASSERT_OK(store().CreateSession(live));
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t pruned, store().PruneSessions(kNow + 100));
  EXPECT_EQ(pruned, 2);  // the token and the short session; "live" stays
  COHORT_ASSERT_OK(store().FindSession("live", kNow + 100).status());
  EXPECT_EQ(store().DeleteSession("short").code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, SessionsEndWithLogoutAndWithTheirKey) {
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord key,
                              store().CreateApiKey(ApiKeyRecord{.entity = kEntity, .hash = "k1"}));
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord other,
                              store().CreateApiKey(ApiKeyRecord{.entity = kEntity, .hash = "k2"}));
  for (const char* hash : {"a", "b"}) {
    SessionRecord s = Session(hash);
    s.key_id = key.id;
    COHORT_ASSERT_OK(store().CreateSession(s));
  }
  SessionRecord theirs = Session("c");
  theirs.key_id = other.id;
  COHORT_ASSERT_OK(store().CreateSession(theirs));
  COHORT_ASSERT_OK(store().CreateSession(Token("t", key.id)));

  COHORT_ASSERT_OK(store().DeleteSession("a"));  // logout
  EXPECT_EQ(store().FindSession("a", kNow).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().DeleteSession("a").code(), StatusCode::kNotFound);

  COHORT_ASSERT_OK(store().RevokeApiKey(kEntity, key.id));
  EXPECT_EQ(store().FindSession("b", kNow).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().RedeemLoginToken("t", Session("d"), kNow).status().code(),
            StatusCode::kNotFound);
  COHORT_ASSERT_OK(store().FindSession("c", kNow).status());  // another key's session lives
  // Nothing is stored for a revoked or unknown key.
  SessionRecord late = Session("e");
  late.key_id = key.id;
  EXPECT_EQ(store().CreateSession(late).code(), StatusCode::kNotFound);
  late.key_id = 987654;
  EXPECT_EQ(store().CreateSession(late).code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t pruned, store().PruneSessions(kNow));
  EXPECT_EQ(pruned, 2);  // "b" and the token of the revoked key
  COHORT_ASSERT_OK(store().FindSession("c", kNow).status());
}

}  // namespace cohort::store
