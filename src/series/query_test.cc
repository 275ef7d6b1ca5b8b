#include "series/query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using testing::BruteForceBuckets;
using testing::Chunked;
using testing::DiffBuckets;
using testing::DiffPoints;
using testing::kMax;
using testing::kMin;
using testing::MemSeries;
using testing::Rng;

std::vector<Point> Sequential(size_t n) {
  std::vector<Point> pts;
  for (size_t i = 0; i < n; ++i) {
    pts.push_back({int64_t(i), 1700000000000 + 100 * int64_t(i), double(i % 1000)});
  }
  return pts;
}

// Every point with step in [lo, hi] and time in [tmin, tmax], sorted by step, stable.
std::vector<Point> BruteForceRaw(std::vector<Point> pts, int64_t lo, int64_t hi, int64_t tmin,
                                 int64_t tmax) {
  std::vector<Point> out;
  for (const auto& p : pts) {
    if (p.step >= lo && p.step <= hi && p.time_ms >= tmin && p.time_ms <= tmax) out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Point& a, const Point& b) { return a.step < b.step; });
  return out;
}

TEST(QueryTest, BucketsEqualBruteForce) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    auto pts = testing::RandomPoints(rng, rng() % 20000);
    testing::MakeSumsExact(rng, &pts);
    MemSeries m = Chunked(pts);
    for (int round = 0; round < 5; ++round) {
      SeriesQuery q;
      q.buckets = 1 + int(rng() % 1200);
      if (!pts.empty() && rng() % 2) q.min_step = pts[rng() % pts.size()].step;
      if (!pts.empty() && rng() % 2) q.max_step = pts[rng() % pts.size()].step;
      if (!pts.empty() && rng() % 3 == 0) q.min_time_ms = pts[rng() % pts.size()].time_ms;
      if (!pts.empty() && rng() % 3 == 0) q.max_time_ms = pts[rng() % pts.size()].time_ms;
      SeriesResult out;
      Status s = QuerySeries(m.metas, m.Loader(), q, &out);
      ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.ToString();
      std::vector<Bucket> want;
      if (!pts.empty()) {
        // Without a step range the grid spans the steps of the points in the time range.
        int64_t lo = kMax, hi = kMin;
        for (const auto& p : pts) {
          if (p.time_ms < q.min_time_ms.value_or(kMin) ||
              p.time_ms > q.max_time_ms.value_or(kMax)) {
            continue;
          }
          lo = std::min(lo, p.step);
          hi = std::max(hi, p.step);
        }
        lo = q.min_step.value_or(lo);
        hi = q.max_step.value_or(hi);
        if (lo <= hi) {
          want = BruteForceBuckets(pts, lo, hi, q.buckets, q.min_time_ms.value_or(kMin),
                                   q.max_time_ms.value_or(kMax));
        }
      }
      ASSERT_EQ(DiffBuckets(want, out.buckets), "") << "seed " << seed << " round " << round;
      ASSERT_TRUE(out.points.empty());
    }
  }
}

TEST(QueryTest, BucketsReadSummariesForChunksInsideOneBucket) {
  const auto pts = Sequential(100 * kMaxChunkPoints);
  MemSeries m = Chunked(pts);
  ASSERT_EQ(m.metas.size(), 100u);
  SeriesQuery q;
  q.buckets = 10;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_LE(m.loads, q.buckets - 1);
  EXPECT_EQ(DiffBuckets(BruteForceBuckets(pts, 0, int64_t(pts.size()) - 1, 10), out.buckets), "");
}

TEST(QueryTest, TimeRangeLoadsOnlyTheChunksItCuts) {
  const auto pts = Sequential(20 * kMaxChunkPoints);
  MemSeries m = Chunked(pts);
  SeriesQuery q;
  q.buckets = 1;
  q.min_time_ms = pts[5 * kMaxChunkPoints + 17].time_ms;
  q.max_time_ms = pts[9 * kMaxChunkPoints + 3].time_ms;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_EQ(m.loads, 2);
  EXPECT_EQ(DiffBuckets(BruteForceBuckets(pts, 0, int64_t(pts.size()) - 1, 1, *q.min_time_ms,
                                          *q.max_time_ms),
                        out.buckets),
            "");
}

TEST(QueryTest, RawPagesCoverEveryPointExactlyOnce) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    auto pts = testing::RandomPoints(rng, rng() % 15000);
    if (rng() % 2) {  // few distinct steps: many equal steps across chunks
      for (auto& p : pts) p.step = int64_t(rng() % 50) - 25;
    }
    MemSeries m = Chunked(pts);
    SeriesQuery q;
    q.latest_per_step = false;  // every stored point
    q.limit = 1 + int64_t(rng() % 700 + pts.size() / 25);  // at most ~25 pages of re-reads
    if (!pts.empty() && rng() % 3 == 0) q.min_step = pts[rng() % pts.size()].step;
    if (!pts.empty() && rng() % 3 == 0) q.max_step = pts[rng() % pts.size()].step;
    if (!pts.empty() && rng() % 4 == 0) q.min_time_ms = pts[rng() % pts.size()].time_ms;
    if (!pts.empty() && rng() % 4 == 0) q.max_time_ms = pts[rng() % pts.size()].time_ms;
    // Only steps > after_step: INT64_MIN (never stored) is out of reach of the default cursor.
    const auto want =
        BruteForceRaw(pts, std::max(q.min_step.value_or(kMin), kMin + 1), q.max_step.value_or(kMax),
                      q.min_time_ms.value_or(kMin), q.max_time_ms.value_or(kMax));
    std::vector<Point> got;
    for (int page = 0;; ++page) {
      ASSERT_LE(page, int(pts.size())) << "seed " << seed << ": paging does not end";
      SeriesResult out;
      Status s = QuerySeries(m.metas, m.Loader(), q, &out);
      ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.ToString();
      const bool one_step =
          !out.points.empty() && out.points.front().step == out.points.back().step;
      ASSERT_TRUE(int64_t(out.points.size()) <= q.limit || one_step) << "seed " << seed;
      got.insert(got.end(), out.points.begin(), out.points.end());
      if (!out.more) break;
      ASSERT_FALSE(out.points.empty()) << "seed " << seed << ": empty page with more";
      q.after_step = out.points.back().step;
    }
    ASSERT_EQ(DiffPoints(want, got), "") << "seed " << seed << " limit " << q.limit;
  }
}

TEST(QueryTest, RawPageEndsBeforeASplitStep) {
  const std::vector<Point> pts = {{1, 0, 1}, {1, 0, 2}, {2, 0, 3}, {2, 0, 4}, {2, 0, 5}, {3, 0, 6}};
  MemSeries m = Chunked(pts);
  SeriesQuery q;
  q.latest_per_step = false;  // every stored point
  q.limit = 3;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.points.size(), 2u);
  EXPECT_TRUE(out.more);
  q.after_step = 1;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.points.size(), 3u);
  EXPECT_TRUE(out.more);
  EXPECT_EQ(out.points[2].value, 5);
}

TEST(QueryTest, RawPageHoldsAWholeStepLargerThanTheLimit) {
  std::vector<Point> pts(5, {7, 0, 1});
  pts.push_back({8, 0, 2});
  MemSeries m = Chunked(pts);
  SeriesQuery q;
  q.latest_per_step = false;  // every stored point
  q.limit = 2;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_EQ(out.points.size(), 5u);
  EXPECT_TRUE(out.more);
}

TEST(QueryTest, RawEqualStepsKeepArrivalOrderAcrossChunks) {
  MemSeries m;
  auto add = [&](int64_t id, const std::vector<Point>& pts) {
    ChunkEncoder enc;
    for (const Point& p : pts) enc.Append(p.step, p.time_ms, p.value);
    m.metas.push_back({id, enc.summary()});
    m.data[id] = enc.Encode();
  };
  add(10, {{5, 0, 1}, {9, 0, 2}});
  add(11, {{3, 0, 3}, {5, 0, 4}});
  SeriesQuery q;
  q.latest_per_step = false;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.points.size(), 4u);
  EXPECT_EQ(out.points[0].value, 3);
  EXPECT_EQ(out.points[1].value, 1);
  EXPECT_EQ(out.points[2].value, 4);
  EXPECT_EQ(out.points[3].value, 2);
  EXPECT_FALSE(out.more);
  // By default a step answers its latest arrival (the later chunk's), once.
  q.latest_per_step = true;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.points.size(), 3u);
  EXPECT_EQ(out.points[0].value, 3);
  EXPECT_EQ(out.points[1].value, 4);
  EXPECT_EQ(out.points[2].value, 2);
}

// With the default (latest per step), pages still cover every step once, each with the value
// that arrived last, whatever the page size and however equal steps spread over chunks.
TEST(QueryTest, RawPagesAnswerEachStepsLatestArrivalOnce) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng(seed);
    auto pts = testing::RandomPoints(rng, rng() % 5000);
    for (auto& p : pts) p.step = int64_t(rng() % 300);
    MemSeries m = Chunked(pts);
    std::map<int64_t, double> want;  // arrival order: a later point replaces an earlier one
    for (const Point& p : pts) want[p.step] = p.value;
    SeriesQuery q;
    q.limit = 1 + int64_t(rng() % 120);
    std::vector<Point> got;
    for (int page = 0;; ++page) {
      ASSERT_LE(page, int(pts.size()) + 1) << "seed " << seed;
      SeriesResult out;
      ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok()) << "seed " << seed;
      got.insert(got.end(), out.points.begin(), out.points.end());
      if (!out.more) break;
      q.after_step = out.points.back().step;
    }
    ASSERT_EQ(got.size(), want.size()) << "seed " << seed;
    size_t i = 0;
    for (const auto& [step, value] : want) {
      ASSERT_EQ(got[i].step, step) << "seed " << seed;
      ASSERT_TRUE(std::memcmp(&got[i].value, &value, sizeof value) == 0) << "seed " << seed;
      ++i;
    }
  }
}

TEST(QueryTest, RawStopsLoadingOnceThePageIsFull) {
  MemSeries m = Chunked(Sequential(50 * kMaxChunkPoints));
  SeriesQuery q;
  q.limit = 100;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_EQ(out.points.size(), 100u);
  EXPECT_TRUE(out.more);
  EXPECT_EQ(m.loads, 1);
}

TEST(QueryTest, LoaderErrorsArePassedOn) {
  MemSeries m = Chunked(Sequential(100));
  m.data.clear();
  SeriesQuery q;
  SeriesResult out;
  EXPECT_EQ(QuerySeries(m.metas, m.Loader(), q, &out).code(), StatusCode::kNotFound);
}

TEST(QueryTest, ACorruptChunkIsSkippedAndNamedInBucketedQueries) {
  MemSeries m = Chunked(Sequential(3000));
  ASSERT_GE(m.metas.size(), 2u);
  m.data.begin()->second[5] ^= 1;
  const ChunkSummary bad = m.metas[0].summary;
  SeriesQuery q;
  q.buckets = 7;  // buckets straddle chunks: the damaged one must be decoded
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.damaged.size(), 1u);
  EXPECT_EQ(out.damaged[0].min_step, bad.min_step);
  EXPECT_EQ(out.damaged[0].max_step, bad.max_step);
  EXPECT_EQ(out.damaged[0].count, bad.count);
  EXPECT_NE(out.damaged[0].reason.find("checksum"), std::string::npos) << out.damaged[0].reason;
  int64_t total = 0;
  for (const Bucket& b : out.buckets) total += b.count;
  EXPECT_EQ(total, 3000 - bad.count);
}

// With a time range and no step range, a damaged chunk the time range cuts is still named: the
// grid spans the points in the time range, and the damaged chunk's steps (from its summary), so
// the bucketing pass meets it (it was left out of the grid and went unnamed).
TEST(QueryTest, ACorruptChunkIsNamedInTimeFilteredBucketedQueries) {
  MemSeries m = Chunked(Sequential(3000));
  ASSERT_GE(m.metas.size(), 2u);
  m.data.begin()->second[5] ^= 1;
  const ChunkSummary bad = m.metas[0].summary;
  for (bool only_the_damaged : {false, true}) {
    SeriesQuery q;
    q.buckets = 5;
    q.min_time_ms = bad.min_time + 1;  // cuts the damaged chunk
    q.max_time_ms = only_the_damaged ? bad.max_time - 1 : m.metas[1].summary.max_time - 1;
    SeriesResult out;
    ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
    ASSERT_EQ(out.damaged.size(), 1u) << only_the_damaged;
    EXPECT_EQ(out.damaged[0].min_step, bad.min_step);
  }
}

TEST(QueryTest, ACorruptChunkIsSkippedInRawPagesAndTheRestIsServed) {
  MemSeries m = Chunked(Sequential(3000));
  ASSERT_GE(m.metas.size(), 2u);
  m.data.begin()->second[5] ^= 1;
  const ChunkSummary bad = m.metas[0].summary;
  SeriesQuery q;
  q.limit = 100000;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.damaged.size(), 1u);
  EXPECT_EQ(int64_t(out.points.size()), 3000 - bad.count);
  for (const Point& p : out.points) {
    EXPECT_TRUE(p.step < bad.min_step || p.step > bad.max_step) << p.step;
  }
  // A page that does not reach the damaged chunk reports nothing.
  q.min_step = bad.max_step + 1;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_TRUE(out.damaged.empty());
}

TEST(QueryTest, ASummaryThatDisagreesWithItsChunkIsSkippedAsDamaged) {
  MemSeries m = Chunked(Sequential(100));
  m.metas[0].summary.count = 99;
  SeriesQuery q;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  ASSERT_EQ(out.damaged.size(), 1u);
  EXPECT_NE(out.damaged[0].reason.find("summary says 99"), std::string::npos);
}

TEST(QueryTest, AnEmptySeriesGivesNothing) {
  MemSeries m;
  SeriesQuery q;
  SeriesResult out;
  out.points.push_back({1, 1, 1});
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_TRUE(out.points.empty());
  EXPECT_FALSE(out.more);
  q.buckets = 10;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_TRUE(out.buckets.empty());
}

TEST(QueryTest, BadLimitsAndBucketCountsAreInvalid) {
  MemSeries m;
  SeriesQuery q;
  SeriesResult out;
  q.limit = 0;
  EXPECT_EQ(QuerySeries(m.metas, m.Loader(), q, &out).code(), StatusCode::kInvalidArgument);
  q.limit = 10;
  q.buckets = kMaxQueryBuckets + 1;
  EXPECT_EQ(QuerySeries(m.metas, m.Loader(), q, &out).code(), StatusCode::kInvalidArgument);
}

TEST(QueryTest, AfterStepAtInt64MaxGivesNothing) {
  MemSeries m = Chunked({{kMax, 0, 1}});
  SeriesQuery q;
  q.after_step = kMax;
  SeriesResult out;
  ASSERT_TRUE(QuerySeries(m.metas, m.Loader(), q, &out).ok());
  EXPECT_TRUE(out.points.empty());
  EXPECT_FALSE(out.more);
}

}  // namespace
}  // namespace cohort::series

namespace cohort::series {
namespace {

TEST(ChunkRangeOfTest, RawPagesStartAfterTheCursorAndBucketsIgnoreIt) {
  SeriesQuery q;
  q.limit = 10;
  q.after_step = 41;
  q.min_step = 10;
  q.max_time_ms = 500;
  auto raw = ChunkRangeOf(q);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->min_step, 42);
  EXPECT_EQ(raw->max_step, kMaxStep);
  EXPECT_EQ(raw->min_time, kMinStep);
  EXPECT_EQ(raw->max_time, 500);

  q.after_step = kMaxStep;  // a cursor at the last step: nothing after it, and no overflow
  EXPECT_EQ(ChunkRangeOf(q)->min_step, kMaxStep);

  q.buckets = 5;
  q.after_step = 41;
  EXPECT_EQ(ChunkRangeOf(q)->min_step, 10);
}

TEST(ChunkRangeOfTest, RefusesNegativeBucketsAndAnEmptyPage) {
  SeriesQuery q;
  q.buckets = -1;
  EXPECT_EQ(ChunkRangeOf(q).status().code(), StatusCode::kInvalidArgument);
  q.buckets = 0;
  q.limit = 0;
  auto r = ChunkRangeOf(q);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("limit"), std::string::npos);
}

}  // namespace
}  // namespace cohort::series
