#include "series/append.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using testing::BitsOf;
using testing::DiffPoints;
using testing::Rng;

std::vector<store::Point> Ramp(int64_t from, size_t n) {
  std::vector<store::Point> pts;
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = from + int64_t(i);
    pts.push_back({s, 1000 * s, double(float(1.0 / double(s + 1)))});
  }
  return pts;
}

StoredChunk Stored(int64_t index, const std::vector<store::Point>& pts) {
  ChunkEncoder e;
  for (const auto& p : pts) e.Append(p.step, p.time_ms, p.value);
  return {index, e.Encode()};
}

bool SameSummary(const ChunkSummary& a, const ChunkSummary& b) {
  return a.count == b.count && a.nan_count == b.nan_count && a.min_step == b.min_step &&
         a.max_step == b.max_step && a.min_time == b.min_time && a.max_time == b.max_time &&
         BitsOf(a.min) == BitsOf(b.min) && BitsOf(a.max) == BitsOf(b.max) &&
         BitsOf(a.sum) == BitsOf(b.sum) && BitsOf(a.first) == BitsOf(b.first) &&
         BitsOf(a.last) == BitsOf(b.last);
}

ChunkSummary SummaryOf(const std::vector<store::Point>& pts) {
  ChunkSummary s;
  for (const auto& p : pts) s.Add(p.step, p.time_ms, p.value);
  return s;
}

TEST(AppendTest, NoPointsWriteNothing) {
  auto w = AppendToSeries(std::nullopt, {});
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->empty());
  auto w2 = AppendToSeries(Stored(3, Ramp(0, 10)), {});
  ASSERT_TRUE(w2.ok());
  EXPECT_TRUE(w2->empty());
}

TEST(AppendTest, WithoutAHeadChunksStartAtIndexZeroAndFillUp) {
  const auto pts = Ramp(0, 2 * kMaxChunkPoints + 100);
  auto w = AppendToSeries(std::nullopt, pts);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->size(), 3u);
  std::vector<store::Point> all;
  for (size_t i = 0; i < w->size(); ++i) {
    const ChunkWrite& cw = (*w)[i];
    EXPECT_EQ(cw.index, int64_t(i));
    EXPECT_FALSE(cw.replaces);
    auto dec = DecodeChunk(cw.data);
    ASSERT_TRUE(dec.ok());
    EXPECT_EQ(dec->size(), i < 2 ? size_t(kMaxChunkPoints) : 100u);
    EXPECT_TRUE(SameSummary(cw.summary, SummaryOf(*dec))) << "chunk " << i;
    all.insert(all.end(), dec->begin(), dec->end());
  }
  EXPECT_EQ(DiffPoints(pts, all), "");
}

TEST(AppendTest, APartialHeadIsFilledAndReplacedThenNewChunksFollow) {
  const auto old_pts = Ramp(0, kMaxChunkPoints - 50);
  const auto new_pts = Ramp(kMaxChunkPoints - 50, 80);
  auto w = AppendToSeries(Stored(7, old_pts), new_pts);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[0].index, 7);
  EXPECT_TRUE((*w)[0].replaces);
  EXPECT_EQ((*w)[0].summary.count, kMaxChunkPoints);
  EXPECT_EQ((*w)[1].index, 8);
  EXPECT_FALSE((*w)[1].replaces);
  EXPECT_EQ((*w)[1].summary.count, 30);
  auto head = DecodeChunk((*w)[0].data);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(DiffPoints(Ramp(0, kMaxChunkPoints), *head), "");
}

TEST(AppendTest, AFullHeadIsLeftAloneAndANewChunkStarts) {
  auto w = AppendToSeries(Stored(4, Ramp(0, kMaxChunkPoints)), Ramp(kMaxChunkPoints, 5));
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 1u);
  EXPECT_EQ((*w)[0].index, 5);
  EXPECT_FALSE((*w)[0].replaces);
  EXPECT_EQ((*w)[0].summary.count, 5);
}

TEST(AppendTest, ACorruptHeadIsReportedAsCorruption) {
  StoredChunk head = Stored(0, Ramp(0, 10));
  head.data[3] ^= 0x40;
  auto w = AppendToSeries(head, Ramp(10, 1));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kCorruption);
}

TEST(AppendTest, BatchedAppendsGiveTheSameChunksAsOneAppend) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng(seed);
    const auto pts = testing::RandomPoints(rng, rng() % (3 * kMaxChunkPoints));
    std::vector<ChunkWrite> store;  // index == position
    for (size_t i = 0; i < pts.size();) {
      const size_t len = std::min<size_t>(pts.size() - i, 1 + rng() % 3000);
      std::optional<StoredChunk> head;
      if (!store.empty()) head = StoredChunk{store.back().index, store.back().data};
      auto w = AppendToSeries(head, {pts.begin() + long(i), pts.begin() + long(i + len)});
      ASSERT_TRUE(w.ok()) << "seed " << seed << ": " << w.status().ToString();
      for (ChunkWrite& cw : *w) {
        if (cw.replaces) {
          ASSERT_EQ(cw.index, int64_t(store.size()) - 1) << "seed " << seed;
          store.back() = cw;
        } else {
          ASSERT_EQ(cw.index, int64_t(store.size())) << "seed " << seed;
          store.push_back(cw);
        }
      }
      i += len;
    }
    auto once = AppendToSeries(std::nullopt, pts);
    ASSERT_TRUE(once.ok());
    ASSERT_EQ(store.size(), once->size()) << "seed " << seed;
    for (size_t c = 0; c < store.size(); ++c) {
      ASSERT_EQ(store[c].data, (*once)[c].data) << "seed " << seed << " chunk " << c;
      ASSERT_TRUE(SameSummary(store[c].summary, (*once)[c].summary))
          << "seed " << seed << " chunk " << c;
    }
  }
}

}  // namespace
}  // namespace cohort::series
