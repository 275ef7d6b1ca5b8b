#include "series/tail.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using testing::BitsOf;
using testing::Rng;

std::vector<Point> Ramp(int64_t from, size_t n) {
  std::vector<Point> pts;
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = from + int64_t(i);
    pts.push_back({s, 1000 * s, double(float(1.0 / double(s + 1)))});
  }
  return pts;
}

// A stored series simulated in memory: chunk index -> encoded chunk, as a store holds it.
struct Stored {
  TailState state;
  std::map<int64_t, std::string> chunks;

  // Appends as a store does: reads the tail when compaction is due, applies the plan.
  TailAppend Append(const std::vector<Point>& points) {
    std::vector<Point> tail;
    const bool compact = TailNeedsCompaction(state, points.size());
    if (compact) {
      for (auto it = chunks.lower_bound(state.tail_idx); it != chunks.end(); ++it) {
        auto pts = DecodeChunk(it->second);
        EXPECT_TRUE(pts.ok());
        tail.insert(tail.end(), pts->begin(), pts->end());
      }
    }
    auto plan = PlanTailAppend(&state, points, compact ? &tail : nullptr);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    for (int64_t i = plan->delete_lo; i < plan->delete_hi; ++i) EXPECT_EQ(chunks.erase(i), 1u);
    for (const ChunkWrite& w : plan->chunks) {
      EXPECT_TRUE(chunks.emplace(w.index, w.data).second) << "index reused: " << w.index;
    }
    return *plan;
  }

  // Seals the tail as a store does when the series' writer finishes.
  TailAppend Seal() {
    std::vector<Point> tail;
    for (auto it = chunks.lower_bound(state.tail_idx); it != chunks.end(); ++it) {
      auto pts = DecodeChunk(it->second);
      EXPECT_TRUE(pts.ok());
      tail.insert(tail.end(), pts->begin(), pts->end());
    }
    auto plan = PlanTailSeal(&state, tail);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    for (int64_t i = plan->delete_lo; i < plan->delete_hi; ++i) EXPECT_EQ(chunks.erase(i), 1u);
    for (const ChunkWrite& w : plan->chunks) {
      EXPECT_TRUE(chunks.emplace(w.index, w.data).second) << "index reused: " << w.index;
    }
    return *plan;
  }

  std::vector<Point> All() const {
    std::vector<Point> out;
    for (const auto& [idx, data] : chunks) {
      auto pts = DecodeChunk(data);
      EXPECT_TRUE(pts.ok());
      out.insert(out.end(), pts->begin(), pts->end());
    }
    return out;
  }
};

void ExpectSamePoints(const std::vector<Point>& got, const std::vector<Point>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].step, want[i].step) << "at " << i;
    ASSERT_EQ(got[i].time_ms, want[i].time_ms) << "at " << i;
    ASSERT_EQ(BitsOf(got[i].value), BitsOf(want[i].value)) << "at " << i;
  }
}

TEST(TailTest, SmallBatchBecomesOneTailChunkWithoutRewritingEarlierOnes) {
  Stored s;
  s.Append(Ramp(0, 100));
  TailAppend second = s.Append(Ramp(100, 100));
  EXPECT_EQ(second.delete_hi, second.delete_lo);  // nothing rewritten
  ASSERT_EQ(second.chunks.size(), 1u);
  EXPECT_EQ(second.chunks[0].index, 1);
  EXPECT_EQ(second.chunks[0].summary.count, 100);
  EXPECT_EQ(s.state.next_idx, 2);
  EXPECT_EQ(s.state.tail_idx, 0);
  EXPECT_EQ(s.state.tail_count, 200);
  EXPECT_EQ(s.state.tail_chunks, 2);
}

TEST(TailTest, LargeBatchOnEmptyTailIsSealedAtOnce) {
  Stored s;
  TailAppend a = s.Append(Ramp(0, 2 * kMaxChunkPoints + kMinSealedPoints));
  ASSERT_EQ(a.chunks.size(), 3u);
  EXPECT_EQ(s.state.tail_count, 0);
  EXPECT_EQ(s.state.tail_idx, 3);
  EXPECT_EQ(s.state.next_idx, 3);
}

TEST(TailTest, CompactionAtPointLimitRewritesTailIntoFullChunks) {
  Stored s;
  const size_t batch = 100;
  int64_t step = 0;
  bool compacted = false;
  while (!compacted) {
    TailAppend a = s.Append(Ramp(step, batch));
    step += int64_t(batch);
    if (a.delete_hi > a.delete_lo) {
      compacted = true;
      // Every compacted chunk but possibly the last is full.
      for (size_t i = 0; i + 1 < a.chunks.size(); ++i) {
        EXPECT_EQ(a.chunks[i].summary.count, kMaxChunkPoints);
      }
      EXPECT_GE(a.chunks.front().index, a.delete_hi);  // new indexes, never reused
    }
    ASSERT_LE(step, 2 * kMaxTailPoints);
  }
  EXPECT_LT(s.state.tail_count, kMaxTailPoints);
  ExpectSamePoints(s.All(), Ramp(0, size_t(step)));
}

TEST(TailTest, CompactionAtChunkLimitForTinyBatches) {
  Stored s;
  for (int i = 0; i < kMaxTailChunks; ++i) {
    TailAppend a = s.Append(Ramp(i, 1));
    EXPECT_EQ(a.delete_hi, a.delete_lo) << "batch " << i;
  }
  EXPECT_EQ(s.state.tail_chunks, kMaxTailChunks);
  TailAppend a = s.Append(Ramp(kMaxTailChunks, 1));
  EXPECT_EQ(a.delete_lo, 0);
  EXPECT_EQ(a.delete_hi, kMaxTailChunks);
  ASSERT_EQ(a.chunks.size(), 1u);
  EXPECT_EQ(a.chunks[0].summary.count, kMaxTailChunks + 1);
  EXPECT_EQ(s.state.tail_chunks, 1);
  ExpectSamePoints(s.All(), Ramp(0, kMaxTailChunks + 1));
}

TEST(TailTest, CompactionAtTheSeriesOwnChunkLimit) {
  Stored s;
  s.state.chunk_limit = 20;
  for (int i = 0; i < 20; ++i) {
    TailAppend a = s.Append(Ramp(i, 1));
    EXPECT_EQ(a.delete_hi, a.delete_lo) << "batch " << i;
  }
  TailAppend a = s.Append(Ramp(20, 1));
  EXPECT_EQ(a.delete_lo, 0);
  EXPECT_EQ(a.delete_hi, 20);
  EXPECT_EQ(s.state.tail_chunks, 1);
  ExpectSamePoints(s.All(), Ramp(0, 21));
}

TEST(TailTest, ChunkLimitsOfConsecutiveSeriesSpreadOverTheWholeRange) {
  std::map<int64_t, int> seen;
  for (int64_t pk = 1; pk <= 17000; ++pk) {
    const int64_t limit = TailChunkLimit(pk);
    ASSERT_GE(limit, kMinTailChunkLimit);
    ASSERT_LE(limit, kMaxTailChunks);
    EXPECT_EQ(limit, TailChunkLimit(pk));
    ++seen[limit];
  }
  ASSERT_EQ(int64_t(seen.size()), kMaxTailChunks - kMinTailChunkLimit + 1);
  for (const auto& [limit, n] : seen) {
    EXPECT_GT(n, 800) << "limit " << limit;  // 1,000 each when even
    EXPECT_LT(n, 1200) << "limit " << limit;
  }
}

TEST(TailTest, RandomBatchSizesKeepEveryPointInOrder) {
  std::mt19937_64 rng(7);
  Stored s;
  int64_t step = 0;
  for (int i = 0; i < 300; ++i) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 1500)(rng) >> (rng() % 4);
    s.Append(Ramp(step, n));
    step += int64_t(n);
    ASSERT_LT(s.state.tail_count, kMaxTailPoints + kMaxChunkPoints * 2);
    ASSERT_LE(s.state.tail_chunks, kMaxTailChunks);
  }
  ExpectSamePoints(s.All(), Ramp(0, size_t(step)));
}

// The window of kMaxChunkPoints steps that holds `step` (steps here are >= 0).
int64_t WindowOf(int64_t step) { return step / kMaxChunkPoints; }

// Every sealed chunk (index < tail_idx) of dense steps lies inside one window.
void ExpectSealedChunksInOneWindow(const Stored& s) {
  for (const auto& [idx, data] : s.chunks) {
    if (idx >= s.state.tail_idx) break;
    auto pts = DecodeChunk(data);
    ASSERT_TRUE(pts.ok());
    ASSERT_FALSE(pts->empty());
    EXPECT_EQ(WindowOf(pts->front().step), WindowOf(pts->back().step))
        << "chunk " << idx << " spans steps " << pts->front().step << ".." << pts->back().step;
  }
}

TEST(TailTest, LargeBatchesNotMultipleOfChunkSizeSealAlignedChunks) {
  Stored s;
  for (int i = 0; i < 20; ++i) s.Append(Ramp(int64_t(i) * 10000, 10000));
  ExpectSealedChunksInOneWindow(s);
  ExpectSamePoints(s.All(), Ramp(0, 200000));
}

TEST(TailTest, SealedBatchAcrossAWindowEdgeIsCutAtTheEdge) {
  Stored s;
  TailAppend a = s.Append(Ramp(1000, 600));
  ASSERT_EQ(a.chunks.size(), 2u);
  EXPECT_EQ(a.chunks[0].summary.min_step, 1000);
  EXPECT_EQ(a.chunks[0].summary.max_step, 1023);
  EXPECT_EQ(a.chunks[1].summary.min_step, 1024);
  EXPECT_EQ(a.chunks[1].summary.max_step, 1599);
  EXPECT_EQ(s.state.tail_idx, 2);  // both sealed: the first is complete, the second large
  EXPECT_EQ(s.state.tail_count, 0);
}

TEST(TailTest, RandomBatchSizesFromAnOffsetSealAlignedChunks) {
  std::mt19937_64 rng(11);
  Stored s;
  const int64_t first = 777;
  int64_t step = first;
  for (int i = 0; i < 300; ++i) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 3000)(rng) >> (rng() % 4);
    s.Append(Ramp(step, n));
    step += int64_t(n);
  }
  ExpectSealedChunksInOneWindow(s);
  ExpectSamePoints(s.All(), Ramp(first, size_t(step - first)));
}

TEST(TailTest, SparseStepsAreCutAtCoarseEdgesIntoAtLeastHalfFullChunks) {
  std::vector<Point> pts;
  for (int64_t i = 0; i < 10000; ++i) pts.push_back({5 + 10 * i, i, 1.0});
  const auto ranges = CutAligned(pts, LastChunk::kKeep);
  size_t next = 0;
  for (size_t r = 0; r < ranges.size(); ++r) {
    EXPECT_EQ(ranges[r].first, next);
    next = ranges[r].second;
    const size_t n = ranges[r].second - ranges[r].first;
    EXPECT_LE(n, size_t(kMaxChunkPoints));
    if (r + 1 < ranges.size()) {
      EXPECT_GE(n, size_t(kMinSealedPoints)) << "range " << r;
      // Ends on a window edge: the next point is in a later window.
      EXPECT_LT(WindowOf(pts[ranges[r].second - 1].step), WindowOf(pts[ranges[r].second].step));
    }
  }
  EXPECT_EQ(next, pts.size());
}

TEST(TailTest, SparseTinyBatchesAreNotSealedInSmallChunks) {
  Stored s;
  for (int64_t i = 0; i < 3000; ++i) s.Append({{i * 1000, i, double(i)}});  // eval every 1,000
  for (const auto& [idx, data] : s.chunks) {
    if (idx >= s.state.tail_idx) break;
    auto pts = DecodeChunk(data);
    ASSERT_TRUE(pts.ok());
    EXPECT_GE(pts->size(), size_t(kMinSealedPoints)) << "sealed chunk " << idx;
  }
  EXPECT_GE(s.state.tail_idx, 1);  // something was sealed
  std::vector<Point> want;
  for (int64_t i = 0; i < 3000; ++i) want.push_back({i * 1000, i, double(i)});
  ExpectSamePoints(s.All(), want);
}

TEST(TailTest, StepsGoingBackKeepEveryPointInOrder) {
  Stored s;
  s.Append(Ramp(5000, 700));
  s.Append(Ramp(100, 3000));  // a rewind: steps below the stored ones
  s.Append(Ramp(3100, 5000));
  std::vector<Point> want = Ramp(5000, 700);
  for (const auto& p : Ramp(100, 3000)) want.push_back(p);
  for (const auto& p : Ramp(3100, 5000)) want.push_back(p);
  ExpectSamePoints(s.All(), want);
}

TEST(TailTest, SealingAFinishedWritersTailLeavesAlignedSealedChunks) {
  Rng rng(21);
  for (int round = 0; round < 50; ++round) {
    Stored s;
    s.state.chunk_limit = 16;
    std::vector<Point> want;
    int64_t step = int64_t(rng() % 3000);
    for (int b = int(rng() % 40); b > 0; --b) {  // small batches: a tail of many chunks
      const auto batch = Ramp(step, 1 + rng() % 200);
      step += int64_t(batch.size());
      want.insert(want.end(), batch.begin(), batch.end());
      s.Append(batch);
    }
    const int64_t before = s.state.tail_chunks;
    const TailAppend plan = s.Seal();
    EXPECT_EQ(s.state.tail_count, 0);
    EXPECT_EQ(s.state.tail_chunks, 0);
    EXPECT_EQ(s.state.tail_idx, s.state.next_idx);
    if (before == 0) {
      EXPECT_TRUE(plan.chunks.empty());
    }
    for (const ChunkWrite& w : plan.chunks) {  // dense steps: each chunk inside one window
      EXPECT_EQ(w.summary.min_step / kMaxChunkPoints, w.summary.max_step / kMaxChunkPoints);
    }
    ExpectSamePoints(s.All(), want);
    if (before == 0) continue;
    s.Append(Ramp(step, 10));  // a writer that comes back starts a new tail
    EXPECT_EQ(s.state.tail_chunks, 1);
  }
}

TEST(TailTest, SealingWithoutTheTailPointsIsRejected) {
  TailState st{/*next_idx=*/32, /*tail_idx=*/0, /*tail_count=*/32, /*tail_chunks=*/32};
  auto plan = PlanTailSeal(&st, Ramp(0, 1));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.next_idx, 32);  // unchanged
}

TEST(TailTest, CompactionWithoutTheTailPointsIsRejected) {
  TailState st{/*next_idx=*/32, /*tail_idx=*/0, /*tail_count=*/32, /*tail_chunks=*/32};
  auto plan = PlanTailAppend(&st, Ramp(0, 1), nullptr);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.next_idx, 32);  // unchanged
}

}  // namespace
}  // namespace cohort::series
