#include "series/bucketer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using testing::BruteForceBuckets;
using testing::DiffBuckets;
using testing::kMax;
using testing::kMin;
using testing::Rng;

ChunkSummary SummaryOf(const std::vector<Point>& pts) {
  ChunkSummary s;
  for (const auto& p : pts) s.Add(p.step, p.time_ms, p.value);
  return s;
}

TEST(BucketerTest, WidthIsCeilingOfRangeOverN) {
  Bucketer b(0, 9, 3);  // width 4: [0,3] [4,7] [8,9]
  for (int s = 0; s <= 9; ++s) b.AddPoint({s, s, double(s)});
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].step_min, 0);
  EXPECT_EQ(out[0].step_max, 3);
  EXPECT_EQ(out[1].step_min, 4);
  EXPECT_EQ(out[1].step_max, 7);
  EXPECT_EQ(out[2].step_min, 8);
  EXPECT_EQ(out[2].step_max, 9);
  EXPECT_EQ(out[2].count, 2);
  EXPECT_EQ(out[1].sum, 4 + 5 + 6 + 7);
}

TEST(BucketerTest, FewerBucketsWhenTheRangeIsShorterThanN) {
  Bucketer b(5, 7, 10);
  EXPECT_EQ(b.bucket_count(), 3u);
  for (int s = 5; s <= 7; ++s) b.AddPoint({s, 0, 1});
  EXPECT_EQ(b.Finish().size(), 3u);
}

TEST(BucketerTest, WholeInt64RangeInOneBucket) {
  Bucketer b(kMin, kMax, 1);
  EXPECT_EQ(b.bucket_count(), 1u);
  b.AddPoint({kMin, 0, 1});
  b.AddPoint({kMax, 0, 2});
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].count, 2);
  EXPECT_EQ(out[0].first, 1);
  EXPECT_EQ(out[0].last, 2);
}

TEST(BucketerTest, WholeInt64RangeInTwoBucketsSplitsAtZero) {
  Bucketer b(kMin, kMax, 2);
  for (int64_t s : {kMin, int64_t{-1}, int64_t{0}, kMax}) b.AddPoint({s, 0, 1});
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].step_max, -1);
  EXPECT_EQ(out[1].step_min, 0);
  EXPECT_EQ(out[1].count, 2);
}

TEST(BucketerTest, ExtremeRangesMatchBruteForce) {
  const int64_t ends[] = {kMin, kMin + 1, -3, 0, 5, kMax - 1, kMax};
  Rng rng(5);
  for (int64_t lo : ends) {
    for (int64_t hi : ends) {
      if (lo > hi) continue;
      for (int n : {1, 2, 3, 7, 1000}) {
        std::vector<Point> pts;
        for (int i = 0; i < 200; ++i) {
          const int64_t s = i % 3 == 0 ? ends[rng() % 7] : int64_t(rng());
          pts.push_back({s, int64_t(rng() % 100), double(i)});
        }
        Bucketer b(lo, hi, n);
        for (const auto& p : pts) b.AddPoint(p);
        ASSERT_EQ(DiffBuckets(BruteForceBuckets(pts, lo, hi, n), b.Finish()), "")
            << lo << ".." << hi << " n=" << n;
      }
    }
  }
}

TEST(BucketerTest, PointsOutsideTheRangeAreIgnored) {
  Bucketer b(10, 19, 2);
  b.AddPoint({9, 0, 100});
  b.AddPoint({20, 0, 100});
  b.AddPoint({15, 0, 1});
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].count, 1);
  EXPECT_EQ(out[0].max, 1);
}

TEST(BucketerTest, FitsOneBucketOnlyForChunksInsideOneBucket) {
  Bucketer b(0, 99, 10);  // width 10
  EXPECT_TRUE(b.FitsOneBucket(SummaryOf({{10, 0, 1}, {19, 0, 1}})));
  EXPECT_FALSE(b.FitsOneBucket(SummaryOf({{19, 0, 1}, {20, 0, 1}})));
  EXPECT_FALSE(b.FitsOneBucket(SummaryOf({{-1, 0, 1}, {0, 0, 1}})));
  EXPECT_FALSE(b.FitsOneBucket(SummaryOf({{99, 0, 1}, {100, 0, 1}})));
  EXPECT_TRUE(b.FitsOneBucket(ChunkSummary()));
}

TEST(BucketerTest, NanCountsButStaysOutOfMinMaxSum) {
  Bucketer b(0, 9, 2);
  b.AddPoint({0, 0, std::nan("")});
  b.AddPoint({1, 0, 3});
  b.AddPoint({6, 0, std::nan("")});
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].count, 2);
  EXPECT_EQ(out[0].min, 3);
  EXPECT_EQ(out[0].max, 3);
  EXPECT_EQ(out[0].sum, 3);
  EXPECT_TRUE(std::isnan(out[0].first));
  EXPECT_EQ(out[1].count, 1);
  EXPECT_EQ(out[1].min, std::numeric_limits<double>::infinity());
  EXPECT_EQ(out[1].max, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out[1].sum, 0);
}

TEST(BucketerTest, FirstAndLastFollowStepsThenArrival) {
  Bucketer b(0, 99, 1);
  b.AddPoint({50, 0, 1});
  b.AddSummary(SummaryOf({{10, 0, 2}, {90, 0, 3}}));
  b.AddPoint({10, 0, 4});  // equal lowest step, later: not first
  b.AddPoint({90, 0, 5});  // equal highest step, later: last
  const auto out = b.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 2);
  EXPECT_EQ(out[0].last, 5);
}

TEST(BucketerTest, SummariesGiveTheSameBucketsAsPoints) {
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    Rng rng(seed);
    auto pts = testing::RandomPoints(rng, 1 + rng() % 3000);
    testing::MakeSumsExact(rng, &pts);
    int64_t lo = kMax, hi = kMin;
    for (const auto& p : pts) {
      lo = std::min(lo, p.step);
      hi = std::max(hi, p.step);
    }
    if (rng() % 3 == 0) lo = pts[rng() % pts.size()].step;  // some points fall outside
    if (lo > hi) std::swap(lo, hi);
    const int n = 1 + int(rng() % 300);
    Bucketer by_points(lo, hi, n), by_summaries(lo, hi, n);
    size_t summaries = 0;
    for (size_t i = 0; i < pts.size();) {
      const size_t len = std::min<size_t>(pts.size() - i, 1 + rng() % 64);
      const std::vector<Point> chunk(pts.begin() + long(i), pts.begin() + long(i + len));
      const ChunkSummary s = SummaryOf(chunk);
      if (by_summaries.FitsOneBucket(s)) {
        by_summaries.AddSummary(s);
        ++summaries;
      } else {
        by_summaries.AddPoints(chunk.data(), chunk.size(), kMin, kMax);
      }
      for (const auto& p : chunk) by_points.AddPoint(p);
      i += len;
    }
    const auto want = BruteForceBuckets(pts, lo, hi, n);
    ASSERT_EQ(DiffBuckets(want, by_points.Finish()), "") << "seed " << seed;
    ASSERT_EQ(DiffBuckets(want, by_summaries.Finish()), "")
        << "seed " << seed << " (" << summaries << " summaries)";
  }
}

TEST(BucketerTest, AddPointsHonoursTheTimeRange) {
  Rng rng(3);
  auto pts = testing::RandomPoints(rng, 2000);
  testing::MakeSumsExact(rng, &pts);
  for (auto& p : pts) p.time_ms = int64_t(rng() % 1000);
  int64_t lo = kMax, hi = kMin;
  for (const auto& p : pts) {
    lo = std::min(lo, p.step);
    hi = std::max(hi, p.step);
  }
  Bucketer b(lo, hi, 37);
  b.AddPoints(pts.data(), pts.size(), 200, 700);
  EXPECT_EQ(DiffBuckets(BruteForceBuckets(pts, lo, hi, 37, 200, 700), b.Finish()), "");
}

}  // namespace
}  // namespace cohort::series
