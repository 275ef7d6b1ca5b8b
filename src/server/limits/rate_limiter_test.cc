#include "server/limits/rate_limiter.h"

#include <gtest/gtest.h>

namespace cohort::limits {
namespace {

LimitsConfig OneTier(TierLimits t) {
  LimitsConfig c;
  c.tiers["low"] = t;
  c.default_tier = "low";
  return c;
}

TEST(RateLimiterTest, RequestBucketAdmitsBurstThenRefusesWithRetryAfter) {
  RateLimiter rl(OneTier({/*requests_per_second=*/2, /*request_burst=*/3, 0, 0}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rl.AdmitRequest("a", 10.0).allowed) << i;
  Decision d = rl.AdmitRequest("a", 10.0);
  EXPECT_FALSE(d.allowed);
  EXPECT_DOUBLE_EQ(d.retry_after_s, 0.5);
  EXPECT_EQ(d.limit, 2);
  EXPECT_FALSE(rl.AdmitRequest("a", 10.4).allowed);
  EXPECT_TRUE(rl.AdmitRequest("a", 10.5).allowed);
}

TEST(RateLimiterTest, SeveralRequestsAtOnceAreChargedAllOrNothingAndMayOwe) {
  RateLimiter rl(OneTier({/*requests_per_second=*/2, /*request_burst=*/3, 0, 0}));
  // A call of 3 writes: one at its arrival, two more once counted (the burst: all three fit).
  EXPECT_TRUE(rl.AdmitRequest("a", 10.0).allowed);
  EXPECT_TRUE(rl.AdmitRequests("a", 2, 1, 10.0).allowed);  // 0 left
  EXPECT_TRUE(rl.AdmitRequest("a", 10.5).allowed);         // 1 after 0.5 s: taken
  EXPECT_TRUE(rl.AdmitRequest("a", 11.0).allowed);         // 1 more: taken, 0 left
  Decision short_of = rl.AdmitRequests("a", 2, 0, 11.0);
  EXPECT_FALSE(short_of.allowed);  // nothing taken
  EXPECT_DOUBLE_EQ(short_of.retry_after_s, 1.0);
  // A call of 10 writes past the burst: its arrival's 1, then 9 needing a full bucket (3 - 1),
  // leaving it 7 in debt, as 10 at once would.
  EXPECT_TRUE(rl.AdmitRequest("a", 20.0).allowed);
  EXPECT_TRUE(rl.AdmitRequests("a", 9, 1, 20.0).allowed);
  EXPECT_FALSE(rl.AdmitRequest("a", 23.0).allowed);  // -1 after 3 s
  EXPECT_TRUE(rl.AdmitRequest("a", 24.0).allowed);   // 1 after 4 s
  std::vector<EntityUsage> usage = rl.Usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].requests, 1u + 2u + 1u + 1u + 1u + 9u + 1u);
  EXPECT_EQ(usage[0].rejected_requests, 2u);
}

TEST(RateLimiterTest, EntitiesHaveSeparateBuckets) {
  RateLimiter rl(OneTier({1, 1, 0, 0}));
  EXPECT_TRUE(rl.AdmitRequest("a", 0).allowed);
  EXPECT_FALSE(rl.AdmitRequest("a", 0).allowed);
  EXPECT_TRUE(rl.AdmitRequest("b", 0).allowed);
}

TEST(RateLimiterTest, PointsBucketAdmitsOversizedBatchWhenFullAndThenOwes) {
  RateLimiter rl(OneTier({0, 0, /*points_per_second=*/100, /*point_burst=*/100}));
  EXPECT_TRUE(rl.AdmitPoints("a", 250, 0).allowed);    // full bucket: goes 150 into debt
  EXPECT_FALSE(rl.AdmitPoints("a", 10, 1.0).allowed);  // -50 after 1 s
  Decision d = rl.AdmitPoints("a", 10, 2.0);           // 50 after 2 s
  EXPECT_TRUE(d.allowed);
  EXPECT_DOUBLE_EQ(d.remaining, 40);
  Decision refused = rl.AdmitPoints("a", 100, 2.0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_DOUBLE_EQ(refused.retry_after_s, 0.6);  // needs 100, has 40, refills 100/s
}

TEST(RateLimiterTest, SustainedRateMatchesTier) {
  RateLimiter rl(OneTier({0, 0, 1000, 1000}));
  int64_t admitted = 0;
  for (int tick = 0; tick <= 1000; ++tick) {  // 10 s in 10 ms steps, offering 100 points each
    if (rl.AdmitPoints("a", 100, tick * 0.01).allowed) admitted += 100;
  }
  // Burst (1000) plus 10 s at 1000/s, within one batch.
  EXPECT_GE(admitted, 10900);
  EXPECT_LE(admitted, 11100);
}

TEST(RateLimiterTest, ZeroRateIsUnlimited) {
  RateLimiter rl(DefaultLimitsConfig());
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(rl.AdmitRequest("x", 0).allowed);
  EXPECT_TRUE(rl.AdmitPoints("x", 1 << 30, 0).allowed);
  EXPECT_EQ(rl.TierOf("x"), "enterprise");
}

TEST(RateLimiterTest, UsageCountsAdmittedAndRejected) {
  RateLimiter rl(OneTier({1, 1, 10, 10}));
  rl.AdmitRequest("a", 0);
  rl.AdmitRequest("a", 0);
  rl.AdmitPoints("a", 7, 0);
  rl.AdmitPoints("a", 7, 0);
  auto usage = rl.Usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].entity, "a");
  EXPECT_EQ(usage[0].tier, "low");
  EXPECT_EQ(usage[0].requests, 1u);
  EXPECT_EQ(usage[0].rejected_requests, 1u);
  EXPECT_EQ(usage[0].points, 7u);
  EXPECT_EQ(usage[0].rejected_points, 1u);
}

TEST(LimitsConfigTest, ParsesTiersEntitiesAndDefault) {
  auto c = ParseLimitsConfig(R"({
    "default_tier": "free",
    "tiers": {"tiny": {"requests_per_second": 1, "points_per_second": 5, "point_burst": 50}},
    "entities": {"acme": "enterprise", "bob": "tiny"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->default_tier, "free");
  EXPECT_EQ(c->tiers.count("teams"), 1u);  // built-in tiers stay
  EXPECT_EQ(c->tiers.at("tiny").point_burst, 50);
  RateLimiter rl(*c);
  EXPECT_EQ(rl.TierOf("bob"), "tiny");
  EXPECT_EQ(rl.TierOf("acme"), "enterprise");
  EXPECT_EQ(rl.TierOf("someone"), "free");
}

TEST(LimitsConfigTest, KeysPerRunComesFromTheTierWithADefault) {
  auto c = ParseLimitsConfig(R"({
    "tiers": {"small": {"keys_per_run": 50}, "open": {"keys_per_run": 0},
              "plain": {"requests_per_second": 5}},
    "entities": {"a": "small", "b": "open", "c": "plain", "d": "free"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  RateLimiter rl(*c);
  EXPECT_EQ(rl.KeysPerRun("a"), 50);
  EXPECT_EQ(rl.KeysPerRun("b"), 0);                         // unlimited
  EXPECT_EQ(rl.KeysPerRun("c"), kDefaultKeysPerRun);        // a tier that does not say
  EXPECT_EQ(rl.KeysPerRun("d"), 10000);                     // built-in free
  EXPECT_EQ(rl.KeysPerRun("someone"), kDefaultKeysPerRun);  // enterprise, the default
  for (const char* bad :
       {R"({"tiers": {"t": {"keys_per_run": -1}}})", R"({"tiers": {"t": {"keys_per_run": 1.5}}})",
        R"({"tiers": {"t": {"keys_per_run": 2000000000}}})"}) {
    auto parsed = ParseLimitsConfig(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("limits.tiers.t.keys_per_run"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(LimitsConfigTest, ErrorsNameTheField) {
  auto unknown_tier = ParseLimitsConfig(R"({"entities": {"bob": "gold"}})");
  ASSERT_FALSE(unknown_tier.ok());
  EXPECT_NE(unknown_tier.status().message().find("limits.entities.bob"), std::string::npos);
  auto negative = ParseLimitsConfig(R"({"tiers": {"t": {"points_per_second": -1}}})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("points_per_second"), std::string::npos)
      << negative.status().message();
  auto typo = ParseLimitsConfig(R"({"tiers": {"t": {"request_per_second": 1}}})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("request_per_second"), std::string::npos);
  EXPECT_FALSE(ParseLimitsConfig(R"({"default_tier": "gold"})").ok());
  EXPECT_FALSE(ParseLimitsConfig("[1]").ok());
}

}  // namespace
}  // namespace cohort::limits
