#include "agent/backoff.h"

#include <gtest/gtest.h>

namespace cohort::agent {
namespace {

TEST(BackoffTest, DoublesUpToTheCapWithoutJitter) {
  Backoff b({.initial_s = 0.25, .max_s = 4, .multiplier = 2, .jitter = 0});
  std::vector<double> got;
  for (int i = 0; i < 7; ++i) got.push_back(b.NextDelay());
  EXPECT_EQ(got, (std::vector<double>{0.25, 0.5, 1, 2, 4, 4, 4}));
  EXPECT_EQ(b.failures(), 7);
}

TEST(BackoffTest, JitterShortensWithinItsFraction) {
  double u = 0.999;
  Backoff b({.initial_s = 1, .max_s = 30, .multiplier = 2, .jitter = 0.5}, [&] { return u; });
  EXPECT_NEAR(b.NextDelay(), 0.5005, 1e-9);  // base 1, cut by 0.5 * 0.999
  u = 0;
  EXPECT_DOUBLE_EQ(b.NextDelay(), 2);  // base 2, no cut
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b({.initial_s = 1, .max_s = 30, .multiplier = 3, .jitter = 0});
  b.NextDelay();
  b.NextDelay();
  b.Reset();
  EXPECT_DOUBLE_EQ(b.NextDelay(), 1);
}

TEST(RetryAfterTest, ParsesDeltaSeconds) {
  EXPECT_EQ(ParseRetryAfter(" 7 ", 0), 7.0);
  EXPECT_EQ(ParseRetryAfter("-3", 0), 0.0);
  EXPECT_EQ(ParseRetryAfter("soon", 0), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("", 0), std::nullopt);
}

TEST(RetryAfterTest, ParsesHttpDateRelativeToNow) {
  // 2015-10-21 07:28:00 UTC = 1445412480 s.
  auto d = ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480000 - 90000);
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(*d, 90.0);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480000 + 5000), 0.0);
}

}  // namespace
}  // namespace cohort::agent
