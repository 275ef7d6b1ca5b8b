// Conformance cases for alert webhooks and their delivery log (store.h WebhookStore): CRUD with
// write-only secrets, idempotent enqueueing with a cursor that only moves up, and the claim that
// lets exactly one of several concurrent senders have each due delivery.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "store/store_conformance.h"

namespace cohort::store {
namespace {

constexpr int64_t kNow = 5'000'000;

WebhookRecord Hook(const std::string& name, const std::string& url = "https://example.com/h") {
  return WebhookRecord{.entity = "acme",
                       .project = "vision",
                       .name = name,
                       .url = url,
                       .format = "generic",
                       .secret = "s3cret",
                       .min_level = "WARN",
                       .enabled = true,
                       .created_ms = kNow};
}

DeliveryIntent Intent(int64_t webhook_id, int64_t event_id, int64_t now = kNow) {
  return DeliveryIntent{.webhook_id = webhook_id,
                        .entity = "acme",
                        .project = "vision",
                        .event_id = event_id,
                        .alert_id = 100 + event_id,
                        .event_kind = "opened",
                        .now_ms = now};
}

}  // namespace

TEST_P(StoreConformanceTest, WebhooksAreCreatedListedUpdatedAndDeleted) {
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord a, store().CreateWebhook(Hook("ops")));
  EXPECT_GT(a.id, 0);
  EXPECT_EQ(a.secret, "s3cret");
  EXPECT_EQ(a.created_ms, kNow);
  EXPECT_EQ(store().CreateWebhook(Hook("ops")).status().code(), StatusCode::kAlreadyExists);
  Status bad = store().CreateWebhook(Hook("x", "ftp://example.com/h")).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(bad.message().starts_with("url:")) << bad.ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord b, store().CreateWebhook(Hook("chat")));

  COHORT_ASSERT_OK_AND_ASSIGN(auto list, store().ListWebhooks("acme", "vision"));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "chat");  // by name
  EXPECT_EQ(list[1].name, "ops");
  COHORT_ASSERT_OK_AND_ASSIGN(auto other, store().ListWebhooks("acme", "other"));
  EXPECT_TRUE(other.empty());
  EXPECT_EQ(store().GetWebhook("acme", "other", a.id).status().code(), StatusCode::kNotFound);

  // An update without the secret keeps it; with it, replaces it.
  WebhookRecord edit = a;
  edit.name = "ops2";
  edit.format = "slack";
  edit.min_level = "ERROR";
  edit.enabled = false;
  edit.secret = "ignored";
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord u, store().UpdateWebhook(edit, false));
  EXPECT_EQ(u.name, "ops2");
  EXPECT_EQ(u.format, "slack");
  EXPECT_EQ(u.min_level, "ERROR");
  EXPECT_FALSE(u.enabled);
  EXPECT_EQ(u.secret, "s3cret");
  edit.secret = "";
  COHORT_ASSERT_OK_AND_ASSIGN(u, store().UpdateWebhook(edit, true));
  EXPECT_EQ(u.secret, "");
  edit.name = "chat";
  EXPECT_EQ(store().UpdateWebhook(edit, false).status().code(), StatusCode::kAlreadyExists);
  WebhookRecord missing = edit;
  missing.id = 999999;
  missing.name = "zzz";
  EXPECT_EQ(store().UpdateWebhook(missing, false).status().code(), StatusCode::kNotFound);

  Reopen();
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord got, store().GetWebhook("acme", "vision", a.id));
  EXPECT_EQ(got.name, "ops2");
  COHORT_ASSERT_OK(store().DeleteWebhook("acme", "vision", b.id));
  EXPECT_EQ(store().DeleteWebhook("acme", "vision", b.id).code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(list, store().ListWebhooks("acme", "vision"));
  EXPECT_EQ(list.size(), 1u);
}

TEST_P(StoreConformanceTest, DeliveriesAreEnqueuedOnceAndTheCursorOnlyMovesUp) {
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord a, store().CreateWebhook(Hook("a")));
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord b, store().CreateWebhook(Hook("b")));
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t cursor, store().GetDeliveryCursor());
  EXPECT_EQ(cursor, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t added,
      store().EnqueueDeliveries({Intent(a.id, 1), Intent(b.id, 1), Intent(a.id, 2)}, 2));
  EXPECT_EQ(added, 3);
  // Enqueued again (another server, a restart): nothing new; the cursor never goes back.
  COHORT_ASSERT_OK_AND_ASSIGN(added, store().EnqueueDeliveries({Intent(a.id, 1)}, 1));
  EXPECT_EQ(added, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(cursor, store().GetDeliveryCursor());
  EXPECT_EQ(cursor, 2);
  // A webhook deleted meanwhile is skipped, not an error.
  COHORT_ASSERT_OK(store().DeleteWebhook("acme", "vision", b.id));
  COHORT_ASSERT_OK_AND_ASSIGN(added,
                              store().EnqueueDeliveries({Intent(b.id, 3), Intent(a.id, 3)}, 3));
  EXPECT_EQ(added, 1);
  Reopen();
  COHORT_ASSERT_OK_AND_ASSIGN(cursor, store().GetDeliveryCursor());
  EXPECT_EQ(cursor, 3);
  COHORT_ASSERT_OK_AND_ASSIGN(auto log, store().ListDeliveries("acme", "vision", a.id, 10));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].event_id, 3);  // newest first
  EXPECT_EQ(log[2].event_id, 1);
  EXPECT_EQ(log[2].alert_id, 101);
  EXPECT_EQ(log[2].entity, "acme");
  EXPECT_EQ(log[2].project, "vision");
  EXPECT_EQ(log[2].event_kind, "opened");
  EXPECT_EQ(log[2].state, "pending");
  EXPECT_EQ(log[2].attempts, 0);
  EXPECT_EQ(store().ListDeliveries("acme", "other", a.id, 10).status().code(),
            StatusCode::kNotFound);
  // The project's log, and one alert's deliveries.
  COHORT_ASSERT_OK_AND_ASSIGN(auto all,
                              store().ListProjectDeliveries("acme", "vision", std::nullopt, 10));
  ASSERT_EQ(all.size(), 3u);  // b's went with it
  EXPECT_EQ(all[0].event_id, 3);
  COHORT_ASSERT_OK_AND_ASSIGN(auto one, store().ListProjectDeliveries("acme", "vision", 101, 10));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].webhook_id, a.id);
  COHORT_ASSERT_OK_AND_ASSIGN(auto none,
                              store().ListProjectDeliveries("acme", "other", std::nullopt, 10));
  EXPECT_TRUE(none.empty());
}

TEST_P(StoreConformanceTest, ClaimedDeliveriesAreSentByTheirOwnerAndRetried) {
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord a, store().CreateWebhook(Hook("a")));
  COHORT_ASSERT_OK(
      store().EnqueueDeliveries({Intent(a.id, 1), Intent(a.id, 2, kNow + 50)}, 2).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto mine, store().ClaimDeliveries("s1", kNow, 1000, 10));
  ASSERT_EQ(mine.size(), 1u);  // event 2 is not due yet
  EXPECT_EQ(mine[0].event_id, 1);
  EXPECT_EQ(mine[0].claimed_by, "s1");
  EXPECT_EQ(mine[0].claim_until_ms, kNow + 1000);
  // Claimed: nobody else gets it while the claim lasts.
  COHORT_ASSERT_OK_AND_ASSIGN(auto theirs, store().ClaimDeliveries("s2", kNow + 100, 1000, 10));
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(theirs[0].event_id, 2);

  // A failed attempt with a retry: pending again, due at the retry time.
  DeliveryAttempt fail{.delivered = false,
                       .status = 503,
                       .error = "HTTP 503",
                       .now_ms = kNow + 200,
                       .retry_at_ms = kNow + 5000};
  COHORT_ASSERT_OK_AND_ASSIGN(bool ok, store().FinishDelivery(mine[0].id, "s2", fail));
  EXPECT_FALSE(ok);  // not s2's claim
  COHORT_ASSERT_OK_AND_ASSIGN(ok, store().FinishDelivery(mine[0].id, "s1", fail));
  EXPECT_TRUE(ok);
  // s2 never finished event 2: its claim expired at kNow + 1100, so s1 takes it over (event 1
  // is not due again yet); giving up fails it.
  COHORT_ASSERT_OK_AND_ASSIGN(auto expired, store().ClaimDeliveries("s1", kNow + 4999, 1000, 10));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].event_id, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(
      ok, store().FinishDelivery(
              expired[0].id, "s1",
              DeliveryAttempt{
                  .delivered = false, .error = "connection refused", .now_ms = kNow + 4999}));
  EXPECT_TRUE(ok);
  COHORT_ASSERT_OK_AND_ASSIGN(auto again, store().ClaimDeliveries("s1", kNow + 5000, 1000, 10));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].event_id, 1);
  EXPECT_EQ(again[0].attempts, 1);
  EXPECT_EQ(again[0].last_status, 503);
  EXPECT_EQ(again[0].last_error, "HTTP 503");
  COHORT_ASSERT_OK_AND_ASSIGN(
      ok, store().FinishDelivery(
              again[0].id, "s1",
              DeliveryAttempt{.delivered = true, .status = 200, .now_ms = kNow + 5100}));
  EXPECT_TRUE(ok);
  // Finished once: a second finish (a late duplicate) changes nothing.
  COHORT_ASSERT_OK_AND_ASSIGN(ok, store().FinishDelivery(again[0].id, "s1", fail));
  EXPECT_FALSE(ok);
  COHORT_ASSERT_OK_AND_ASSIGN(auto later, store().ClaimDeliveries("s1", kNow + 999999, 1000, 10));
  EXPECT_TRUE(later.empty());

  COHORT_ASSERT_OK_AND_ASSIGN(auto log, store().ListDeliveries("acme", "vision", a.id, 10));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].event_id, 2);
  EXPECT_EQ(log[0].state, "failed");
  EXPECT_EQ(log[0].attempts, 1);
  EXPECT_FALSE(log[0].last_status.has_value());
  EXPECT_EQ(log[0].last_error, "connection refused");
  EXPECT_EQ(log[1].state, "delivered");
  EXPECT_EQ(log[1].attempts, 2);
  EXPECT_EQ(log[1].delivered_ms, kNow + 5100);
  EXPECT_EQ(log[1].last_status, 200);
  EXPECT_EQ(log[1].claimed_by, "");
}

TEST_P(StoreConformanceTest, ClaimingOneDeliveryClaimsOnlyTheOldestDue) {
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord a, store().CreateWebhook(Hook("a")));
  COHORT_ASSERT_OK(
      store().EnqueueDeliveries({Intent(a.id, 1), Intent(a.id, 2), Intent(a.id, 3)}, 3).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto first, store().ClaimDeliveries("s1", kNow, 1000, 1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].event_id, 1);
  // The others stay unclaimed: another server gets the next one at once.
  COHORT_ASSERT_OK_AND_ASSIGN(auto second, store().ClaimDeliveries("s2", kNow, 1000, 1));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].event_id, 2);
  // Skipping a webhook (one being called): the next due delivery of another, though newer.
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord b, store().CreateWebhook(Hook("b")));
  COHORT_ASSERT_OK(store().EnqueueDeliveries({Intent(b.id, 4)}, 4).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto other, store().ClaimDeliveries("s1", kNow, 1000, 1, {a.id}));
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].webhook_id, b.id);
  COHORT_ASSERT_OK_AND_ASSIGN(auto none,
                              store().ClaimDeliveries("s1", kNow, 1000, 5, {a.id, b.id}));
  EXPECT_TRUE(none.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(auto log, store().ListDeliveries("acme", "vision", a.id, 10));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].event_id, 3);
  EXPECT_EQ(log[0].claimed_by, "");
}

TEST_P(StoreConformanceTest, ConcurrentClaimersGetEachDeliveryOnce) {
  COHORT_ASSERT_OK_AND_ASSIGN(WebhookRecord a, store().CreateWebhook(Hook("a")));
  constexpr int kEvents = 60;
  std::vector<DeliveryIntent> intents;
  for (int e = 1; e <= kEvents; ++e) intents.push_back(Intent(a.id, e));
  COHORT_ASSERT_OK(store().EnqueueDeliveries(intents, kEvents).status());
  constexpr int kClaimers = 6;
  std::mutex mu;
  std::map<int64_t, int> claims;  // event -> times claimed
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClaimers; ++t) {
    threads.emplace_back([&, t] {
      const std::string owner = "server-" + std::to_string(t);
      for (int round = 0; round < 20; ++round) {
        auto got = store().ClaimDeliveries(owner, kNow, 60'000, 4);
        if (!got.ok()) {
          ++errors;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        for (const DeliveryRecord& d : *got) ++claims[d.event_id];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(claims.size(), size_t(kEvents));
  for (const auto& [event, n] : claims) EXPECT_EQ(n, 1) << "event " << event;
}

}  // namespace cohort::store
