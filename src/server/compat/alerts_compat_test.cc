#include "server/compat/alerts_compat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace cohort::compat {
namespace {

TEST(AlertCallTimeTest, CallsWithinOneMillisecondGetDistinctTimes) {
  const int64_t now = 4'000'000'000'000;  // after any time an earlier test used
  const int64_t a = AlertCallTimeMs(now);
  const int64_t b = AlertCallTimeMs(now);
  EXPECT_EQ(a, now);
  EXPECT_EQ(b, now + 1);
  EXPECT_EQ(AlertCallTimeMs(now + 10), now + 10);  // the clock ahead again: its time
}

TEST(AlertCallTimeTest, ConcurrentCallsNeverShareATime) {
  const int64_t now = 5'000'000'000'000;
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& out : got) {
    threads.emplace_back([&out, now] {
      for (int i = 0; i < 1000; ++i) out.push_back(AlertCallTimeMs(now));
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<int64_t> all;
  for (const auto& out : got) all.insert(all.end(), out.begin(), out.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), 4000u);
}

}  // namespace
}  // namespace cohort::compat
