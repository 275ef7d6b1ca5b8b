#include "series/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "series/chunk.h"
#include "series/query.h"
#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using Rng = std::mt19937_64;
using testing::Chunked;
using testing::MemSeries;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Buckets every member on `grid` through the ordinary history query.
std::vector<std::vector<Bucket>> BucketMembers(std::vector<MemSeries>& members,
                                               const AggregateGrid& grid) {
  std::vector<std::vector<Bucket>> out;
  for (MemSeries& m : members) {
    out.emplace_back();
    for (const GridPart& part : GridParts(grid)) {
      SeriesQuery q;
      q.min_step = part.min_step;
      q.max_step = part.max_step;
      q.buckets = part.buckets;
      SeriesResult d;
      EXPECT_TRUE(QuerySeries(m.metas, m.Loader(), q, &d).ok());
      out.back().insert(out.back().end(), d.buckets.begin(), d.buckets.end());
    }
  }
  return out;
}

TEST(AggregateGridTest, MillionStepsToThousandBucketsAlignsToChunks) {
  auto g = ChooseAggregateGrid(0, 999999, 1000, kMaxChunkPoints);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->width, 1024);
  EXPECT_EQ(g->first, 0);
  EXPECT_EQ(g->count, 977);
}

TEST(AggregateGridTest, ShortRangeIsOneStepPerBucket) {
  auto g = ChooseAggregateGrid(3, 102, 1000, kMaxChunkPoints);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->width, 1);
  EXPECT_EQ(g->lo(), 3);
  EXPECT_EQ(g->hi(), 102);
  EXPECT_EQ(g->count, 100);
}

TEST(AggregateGridTest, RandomRangesFitInAtMostNAlignedBuckets) {
  Rng rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t lo = int64_t(rng() % 5000000) - 100;
    const int64_t hi = lo + int64_t(rng() % (i % 2 ? 3000 : 5000000));
    const int n = 1 + int(rng() % 2000);
    auto g = ChooseAggregateGrid(lo, hi, n, kMaxChunkPoints);
    ASSERT_TRUE(g.ok());
    const bool split_at_zero = n == 1 && lo < 0 && hi >= 0;
    EXPECT_LE(g->count, split_at_zero ? 2 : n) << lo << ".." << hi << " n=" << n;
    EXPECT_LE(g->lo(), lo);
    EXPECT_GE(g->hi(), hi);
    EXPECT_EQ(g->Slot(lo), 0);
    EXPECT_EQ(g->Slot(hi), g->count - 1);
    if (g->width > kMaxChunkPoints / 2) {
      EXPECT_EQ(g->width % kMaxChunkPoints, 0);
    }
    // Never much coarser than needed (with 1 or 2 buckets alignment may need a wide bucket).
    const int64_t w0 = (hi - lo + 1 + n - 1) / n;
    if (n >= 3) {
      EXPECT_LE(g->width, 2 * w0 + 2 * kMaxChunkPoints) << lo << ".." << hi;
    }
    // The parts of the grid tile [lo, hi] and their buckets are grid buckets.
    int64_t next = lo, slots = 0;
    for (const GridPart& part : GridParts(*g)) {
      EXPECT_EQ(part.min_step, next);
      EXPECT_EQ(g->Slot(part.min_step), slots);
      if (part.buckets > 1) {
        EXPECT_EQ(part.min_step, g->lo() + slots * g->width);
      }
      EXPECT_EQ((part.max_step - part.min_step + 1 + part.buckets - 1) / part.buckets,
                part.buckets == 1 ? part.max_step - part.min_step + 1 : g->width);
      slots += part.buckets;
      next = part.max_step + 1;
    }
    EXPECT_EQ(next, hi + 1);
    EXPECT_EQ(slots, g->count);
  }
}

TEST(AggregateGridTest, PartsClipTheFirstAndLastBucket) {
  auto g = ChooseAggregateGrid(1500, 9000, 4, kMaxChunkPoints);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->width, 3072);  // ceil(7501 / 4) = 1876 -> 2048 -> 5 aligned buckets -> 3072
  EXPECT_EQ(g->count, 3);
  auto parts = GridParts(*g);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].min_step, 1500);
  EXPECT_EQ(parts[0].max_step, 3071);
  EXPECT_EQ(parts[1].min_step, 3072);
  EXPECT_EQ(parts[1].max_step, 6143);
  EXPECT_EQ(parts[1].buckets, 1);
  EXPECT_EQ(parts[2].min_step, 6144);
  EXPECT_EQ(parts[2].max_step, 9000);
}

TEST(AggregateGridTest, RangeFromZeroIsOneQuery) {
  auto g = ChooseAggregateGrid(0, 999999, 1000, kMaxChunkPoints);
  ASSERT_TRUE(g.ok());
  auto parts = GridParts(*g);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].min_step, 0);
  EXPECT_EQ(parts[0].max_step, 999999);
  EXPECT_EQ(parts[0].buckets, 977);
}

TEST(AggregateGridTest, RejectsBadArguments) {
  EXPECT_FALSE(ChooseAggregateGrid(0, 10, 0, kMaxChunkPoints).ok());
  EXPECT_FALSE(ChooseAggregateGrid(10, 0, 5, kMaxChunkPoints).ok());
  EXPECT_FALSE(ChooseAggregateGrid(0, kMaxAggregateStep + 1, 5, kMaxChunkPoints).ok());
}

TEST(AggregateTest, MedianOfOddEvenAndEmpty) {
  std::vector<double> v{5, 1, 3};
  EXPECT_EQ(MedianOf(&v), 3);
  v = {4, 1, 3, 2};
  EXPECT_EQ(MedianOf(&v), 2.5);
  v.clear();
  EXPECT_TRUE(std::isnan(MedianOf(&v)));
}

// Brute force over points: per slot, every statistic the way docs/api.md defines it.
struct Expected {
  int64_t count = 0, members = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  int min_member = -1, max_member = -1;
};

std::map<int64_t, Expected> BruteForce(const AggregateGrid& grid,
                                       const std::vector<std::vector<Point>>& members) {
  // Points outside the grid's clip range are not aggregated.
  std::map<int64_t, Expected> out;
  std::map<int64_t, std::map<int, std::pair<double, int64_t>>> per_member;  // slot -> m -> sum,n
  for (size_t m = 0; m < members.size(); ++m) {
    for (const Point& p : members[m]) {
      if (p.step < grid.clip_lo || p.step > grid.clip_hi) continue;
      const int64_t slot = grid.Slot(p.step);
      Expected& e = out[slot];
      ++e.count;
      if (std::isnan(p.value)) continue;
      if (e.min_member < 0 || p.value < e.min) e.min = p.value, e.min_member = int(m);
      if (e.max_member < 0 || p.value > e.max) e.max = p.value, e.max_member = int(m);
      auto& [sum, n] = per_member[slot][int(m)];
      sum += p.value;
      ++n;
    }
  }
  for (auto& [slot, e] : out) {
    std::vector<double> means;
    double sum = 0;
    int64_t n = 0;
    for (const auto& [m, sn] : per_member[slot]) {
      means.push_back(sn.first / double(sn.second));
      sum += sn.first;
      n += sn.second;
    }
    e.members = int64_t(means.size());
    e.mean = n ? sum / double(n) : kNaN;
    e.median = MedianOf(&means);
  }
  return out;
}

TEST(AggregateTest, EqualsBruteForceOverRandomMembers) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    const int n_members = 1 + int(rng() % 7);
    const int64_t n_steps = 1 + int64_t(rng() % 20000);
    std::vector<std::vector<Point>> pts(static_cast<size_t>(n_members));
    std::vector<MemSeries> series;
    for (auto& member : pts) {
      const int64_t start = int64_t(rng() % 50);
      const double nan_rate = (rng() % 4 == 0) ? 0.2 : 0;
      for (int64_t s = start; s < n_steps; s += 1 + int64_t(rng() % 3)) {
        const double v = (double(rng() % 100000) / 100.0) - 300.0;  // exact in binary? close
        member.push_back({s, 1700000000000 + s * 10,
                          (double(rng() % 1000) / 1000.0 < nan_rate) ? kNaN : std::round(v)});
      }
      series.push_back(Chunked(member));
    }
    const int n = 1 + int(rng() % 1500);
    const int64_t lo = seed % 2 ? 0 : int64_t(rng() % uint64_t(n_steps));
    const int64_t hi = seed % 3 ? n_steps : lo + int64_t(rng() % uint64_t(n_steps - lo + 1));
    auto grid = ChooseAggregateGrid(lo, hi, n, kMaxChunkPoints);
    ASSERT_TRUE(grid.ok());
    auto got = AggregateMembers(*grid, BucketMembers(series, *grid), /*per_member=*/true);
    auto want = BruteForce(*grid, pts);
    ASSERT_EQ(got.size(), want.size()) << "seed " << seed;
    for (const AggregateBucket& b : got) {
      ASSERT_TRUE(want.count(b.slot)) << "seed " << seed << " slot " << b.slot;
      const Expected& e = want[b.slot];
      EXPECT_EQ(b.count, e.count);
      EXPECT_EQ(b.members, e.members);
      if (e.members == 0) {
        EXPECT_TRUE(std::isnan(b.min));
        EXPECT_EQ(b.min_member, -1);
        continue;
      }
      // Integer values: sums are exact, so every statistic matches bit for bit.
      EXPECT_EQ(b.min, e.min) << "seed " << seed;
      EXPECT_EQ(b.max, e.max);
      EXPECT_EQ(b.min_member, e.min_member);
      EXPECT_EQ(b.max_member, e.max_member);
      EXPECT_EQ(b.mean, e.mean);
      EXPECT_EQ(b.median, e.median);
      EXPECT_EQ(b.spread, e.max - e.min);
      ASSERT_EQ(b.values.size(), size_t(n_members));
    }
  }
}

TEST(AggregateTest, OneStepBucketsGiveExactPerStepMedianAndExtremes) {
  // 5 ranks, 200 steps: rank r logs 10*r + step%7; rank 3 is an outlier at +1000.
  std::vector<MemSeries> series;
  for (int r = 0; r < 5; ++r) {
    std::vector<Point> pts;
    for (int64_t s = 0; s < 200; ++s) {
      pts.push_back({s, s, 10.0 * r + double(s % 7) + (r == 3 ? 1000 : 0)});
    }
    series.push_back(Chunked(pts));
  }
  auto grid = ChooseAggregateGrid(0, 199, 1000, kMaxChunkPoints);
  ASSERT_TRUE(grid.ok());
  ASSERT_EQ(grid->width, 1);
  auto got = AggregateMembers(*grid, BucketMembers(series, *grid), false);
  ASSERT_EQ(got.size(), 200u);
  for (const AggregateBucket& b : got) {
    const double base = double(b.step_min % 7);
    EXPECT_EQ(b.step_min, b.step_max);
    EXPECT_EQ(b.members, 5);
    EXPECT_EQ(b.min, base);
    EXPECT_EQ(b.min_member, 0);
    EXPECT_EQ(b.max, base + 1030);
    EXPECT_EQ(b.max_member, 3);
    EXPECT_EQ(b.median, base + 20);  // values base + {0, 10, 20, 1030, 40}
    EXPECT_EQ(b.mean, base + 1100.0 / 5);
    EXPECT_EQ(b.spread, 1030);
    EXPECT_EQ(b.outlier_member, 3);
    EXPECT_GT(b.outlier_z, 20);
  }
}

TEST(AggregateTest, NoOutlierWithFewerThanThreeMembers) {
  std::vector<MemSeries> series;
  for (int r = 0; r < 2; ++r) series.push_back(Chunked({{0, 0, double(r * 100)}}));
  auto grid = ChooseAggregateGrid(0, 0, 10, kMaxChunkPoints);
  ASSERT_TRUE(grid.ok());
  auto got = AggregateMembers(*grid, BucketMembers(series, *grid), false);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].outlier_member, -1);
  EXPECT_EQ(got[0].median, 50);
}

TEST(AggregateTest, NaNOnlyMemberCountsPointsButNotMembers) {
  std::vector<MemSeries> series;
  series.push_back(Chunked({{0, 0, 1.0}, {1, 1, 3.0}}));
  series.push_back(Chunked({{0, 0, kNaN}, {1, 1, kNaN}}));
  auto grid = ChooseAggregateGrid(0, 1, 1, kMaxChunkPoints);
  ASSERT_TRUE(grid.ok());
  auto got = AggregateMembers(*grid, BucketMembers(series, *grid), true);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].count, 4);
  EXPECT_EQ(got[0].members, 1);
  EXPECT_EQ(got[0].mean, 2.0);
  EXPECT_EQ(got[0].values[0], 2.0);
  EXPECT_TRUE(std::isnan(got[0].values[1]));
}

TEST(AggregateTest, AlignedChunksAreReadFromSummariesOnly) {
  // 4 members x 100k steps from 0, appended in batches like an agent does: with a bucket width
  // that is a multiple of the chunk size, no chunk straddles a bucket and none is decoded.
  std::vector<MemSeries> series;
  for (int r = 0; r < 4; ++r) {
    std::vector<Point> pts;
    for (int64_t s = 0; s < 100000; ++s) pts.push_back({s, s * 5, double(r) + double(s % 13)});
    series.push_back(Chunked(pts));
  }
  auto grid = ChooseAggregateGrid(0, 99999, 90, kMaxChunkPoints);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->width % kMaxChunkPoints, 0);
  auto per_member = BucketMembers(series, *grid);
  for (const MemSeries& m : series) EXPECT_EQ(m.loads, 0);
  auto got = AggregateMembers(*grid, per_member, false);
  ASSERT_EQ(int64_t(got.size()), grid->count);
  EXPECT_EQ(got.front().step_min, 0);
  EXPECT_EQ(got.back().step_max, 99999);
  for (const auto& b : got) {
    EXPECT_EQ(b.min_member, 0);
    EXPECT_EQ(b.max_member, 3);
    EXPECT_EQ(b.count, 4 * (b.step_max - b.step_min + 1));
  }
}

}  // namespace
}  // namespace cohort::series
