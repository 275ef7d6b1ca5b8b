// Conformance cases: a finished writer's series keep no tail chunks (series/tail.h PlanTailSeal,
// sql/sql_tail_seal.h), and sealing them changes no answer.
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <variant>

#include "store/dump_format.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

struct Tail {
  int64_t next_idx = 0, tail_idx = 0, tail_count = 0, tail_chunks = 0;
  bool operator==(const Tail&) const = default;
};

// The tail columns of every series in the store's dump, by (writer label, key).
std::map<std::pair<std::string, std::string>, Tail> Tails(Store& store) {
  std::map<int64_t, std::string> labels;  // writer pk -> label (writers come before series)
  std::map<std::pair<std::string, std::string>, Tail> out;
  const Status st = store.Export([&](const DumpRecord& rec) -> Status {
    const auto i = [&](size_t col) { return std::get<int64_t>(rec.values[col]); };
    if (rec.table == kDumpWriters) labels[i(0)] = std::get<std::string>(rec.values[2]);
    if (rec.table == kDumpSeries) {
      out[{labels[i(2)], std::get<std::string>(rec.values[3])}] = Tail{i(8), i(9), i(10), i(11)};
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// No chunk index twice in a series. SQLite's UNIQUE (series_pk, idx) refuses it; PostgreSQL's
// key includes the partition column `sealed` (a partitioned table's unique keys must), so only
// the write path keeps a tail chunk and a sealed chunk from sharing an index: checked here.
void ExpectEachChunkIndexOnce(Store& store) {
  std::map<std::pair<int64_t, int64_t>, int> seen;
  const Status st = store.Export([&](const DumpRecord& rec) -> Status {
    if (rec.table == kDumpChunks) {
      ++seen[{std::get<int64_t>(rec.values[0]), std::get<int64_t>(rec.values[1])}];
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(seen.empty());
  for (const auto& [chunk, n] : seen) {
    EXPECT_EQ(n, 1) << "series " << chunk.first << " has chunk index " << chunk.second << " "
                    << n << " times";
  }
}

// Every point of `a` and `b` the same, bit for bit.
void ExpectSamePoints(const std::vector<SeriesData>& a, const std::vector<SeriesData>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    EXPECT_EQ(a[s].key + "/" + a[s].writer, b[s].key + "/" + b[s].writer);
    ASSERT_EQ(a[s].points.size(), b[s].points.size()) << a[s].key;
    for (size_t i = 0; i < a[s].points.size(); ++i) {
      ASSERT_EQ(a[s].points[i].step, b[s].points[i].step) << a[s].key << " " << i;
      ASSERT_EQ(a[s].points[i].time_ms, b[s].points[i].time_ms) << a[s].key << " " << i;
      ASSERT_EQ(std::bit_cast<uint64_t>(a[s].points[i].value),
                std::bit_cast<uint64_t>(b[s].points[i].value))
          << a[s].key << " " << i;
    }
  }
}

// A writer of 300 keys, each with a tail of three small chunks (of 240 keys also a sealed chunk
// before it): its finish seals more chunks than one statement inserts or deletes
// (sql_tail_seal.cc: up to 32 at a time), and every series reads back the same points with no
// tail left and its next chunk index right after its one new sealed chunk.
int KeyIndex(const std::string& key) {  // "layer<k>/norm" -> k
  return std::stoi(key.substr(5, key.find('/') - 5));
}

TEST_P(StoreConformanceTest, FinishedWriterOfManyKeysSealsEveryTail) {
  MakeRun("run1");
  Join("run1", "w");
  constexpr int kKeys = 300;
  std::vector<std::string> keys;
  for (int k = 0; k < kKeys; ++k) keys.push_back("layer" + std::to_string(k) + "/norm");
  int64_t step = 0;
  // First a batch of 512 rows of the first 240 keys: sealed at once (a chunk below their tails).
  {
    IngestBatchBuilder b(1);
    for (int row = 0; row < 512; ++row, ++step) {
      std::vector<IngestBatchBuilder::Cell> cells;
      for (int k = 0; k < 240; ++k) cells.push_back({keys[k], double(k * 1000 + step) / 7});
      b.AddHistoryRow(step, 1000 + 10 * step, cells);
    }
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 1).status());
  }
  for (int seq = 2; seq <= 4; ++seq) {
    IngestBatchBuilder b(seq);
    for (int row = 0; row < 4; ++row, ++step) {
      std::vector<IngestBatchBuilder::Cell> cells;
      for (int k = 0; k < kKeys; ++k) cells.push_back({keys[k], double(k * 1000 + step) / 7});
      b.AddHistoryRow(step, 1000 + 10 * step, cells);
    }
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 1).status());
  }
  const auto before = Tails(store());
  ASSERT_EQ(before.size(), size_t(kKeys));
  for (const auto& [series, tail] : before) ASSERT_EQ(tail.tail_chunks, 3) << series.second;
  const HistoryQuery raw{.run = Ref("run1"), .series = {.limit = 100000}};
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_before, store().QueryHistory(raw));

  COHORT_ASSERT_OK(store().FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 5).status());
  const auto after = Tails(store());
  ASSERT_EQ(after.size(), size_t(kKeys));
  ExpectEachChunkIndexOnce(store());
  for (const auto& [series, tail] : after) {
    EXPECT_EQ(tail.tail_chunks, 0) << series.second;
    EXPECT_EQ(tail.tail_count, 0) << series.second;
    EXPECT_EQ(tail.tail_idx, tail.next_idx) << series.second;
    // The 12 points of each tail seal into one chunk, right after the tail's place.
    EXPECT_EQ(tail.next_idx, before.at(series).next_idx + 1) << series.second;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_after, store().QueryHistory(raw));
  ExpectSamePoints(raw_before, raw_after);
  COHORT_ASSERT_OK_AND_ASSIGN(auto listed, store().ListSeries(Ref("run1")));
  ASSERT_EQ(listed.size(), size_t(kKeys));
  for (const SeriesInfo& s : listed) {
    EXPECT_EQ(s.count, 12 + (KeyIndex(s.key) < 240 ? 512 : 0)) << s.key;
  }
}

// 25 batches of 90 rows of two keys (a tail of small chunks per series, -0.0 and NaN among the
// values), and a second writer with 3 rows a batch; the first writer finishes: its series have
// no tail left and read back the same points, raw and bucketed; the other writer's are as
// they were, and it keeps writing.
TEST_P(StoreConformanceTest, FinishedWriterKeepsNoTailChunks) {
  MakeRun("run1");
  Join("run1", "w");
  Join("run1", "other", /*primary=*/false);
  int64_t step = 0;
  for (int seq = 1; seq <= 25; ++seq) {
    IngestBatchBuilder b(seq), first_rows(seq);
    for (int i = 0; i < 90; ++i, ++step) {
      const double loss = step == 77 ? -0.0
                          : step == 78 ? std::numeric_limits<double>::quiet_NaN()
                                       : 1.0 / double(1 + step);
      const std::initializer_list<IngestBatchBuilder::Cell> cells = {
          {"acc", double(step % 1000) / 1000}, {"loss", loss}};
      b.AddHistoryRow(step, 1000 + 10 * step + step % 3, cells);
      if (i < 3) first_rows.AddHistoryRow(step, 1000 + 10 * step, cells);
    }
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 1).status());
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "other", first_rows.Finish(), 1).status());
  }
  const auto before = Tails(store());
  ASSERT_EQ(before.size(), 4u);
  ExpectEachChunkIndexOnce(store());
  for (const auto& [series, tail] : before) {
    ASSERT_GT(tail.tail_chunks, 0) << series.first << "/" << series.second;
  }
  const HistoryQuery raw{.run = Ref("run1"), .series = {.limit = 100000}};
  const HistoryQuery bucketed{.run = Ref("run1"), .series = {.buckets = 7}};
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_before, store().QueryHistory(raw));
  COHORT_ASSERT_OK_AND_ASSIGN(auto buckets_before, store().QueryHistory(bucketed));

  COHORT_ASSERT_OK(store().FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 5).status());
  const auto after = Tails(store());
  ASSERT_EQ(after.size(), 4u);
  ExpectEachChunkIndexOnce(store());
  for (const auto& [series, tail] : after) {
    if (series.first == "w") {
      EXPECT_EQ(tail.tail_chunks, 0) << series.second;
      EXPECT_EQ(tail.tail_count, 0) << series.second;
      EXPECT_EQ(tail.tail_idx, tail.next_idx) << series.second;
      EXPECT_GT(tail.next_idx, before.at(series).next_idx) << series.second;  // new indexes
    } else {
      EXPECT_EQ(tail, before.at(series)) << series.second;
    }
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_after, store().QueryHistory(raw));
  ExpectSamePoints(raw_before, raw_after);
  COHORT_ASSERT_OK_AND_ASSIGN(auto buckets_after, store().QueryHistory(bucketed));
  ASSERT_EQ(buckets_after.size(), buckets_before.size());
  for (size_t s = 0; s < buckets_after.size(); ++s) {
    ASSERT_EQ(buckets_after[s].buckets.size(), buckets_before[s].buckets.size());
    for (size_t i = 0; i < buckets_after[s].buckets.size(); ++i) {
      const series::Bucket &x = buckets_before[s].buckets[i], &y = buckets_after[s].buckets[i];
      EXPECT_EQ(x.count, y.count);
      EXPECT_EQ(x.nan_count, y.nan_count);
      EXPECT_EQ(x.step_min, y.step_min);
      EXPECT_EQ(x.step_max, y.step_max);
      EXPECT_EQ(x.min, y.min);
      EXPECT_EQ(x.max, y.max);
      EXPECT_DOUBLE_EQ(x.sum, y.sum);
    }
  }
  // The point count of each series is unchanged; the other writer keeps appending.
  COHORT_ASSERT_OK_AND_ASSIGN(auto listed, store().ListSeries(Ref("run1")));
  for (const SeriesInfo& s : listed) EXPECT_EQ(s.count, s.writer == "w" ? 2250 : 75) << s.key;
  IngestBatchBuilder more(26);
  more.AddHistoryRow(step, 1000 + 10 * step, {{"acc", 0.5}});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "other", more.Finish(), 1).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_more, store().QueryHistory(raw));
  size_t points = 0;
  for (const SeriesData& s : raw_more) points += s.points.size();
  EXPECT_EQ(points, 2 * 2250u + 2 * 75u + 1u);
  ExpectEachChunkIndexOnce(store());
  // A dump copy reads back the same.
  COHORT_ASSERT_OK_AND_ASSIGN(auto copy, DumpCopy());
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_copy, copy->QueryHistory(raw));
  ExpectSamePoints(raw_more, raw_copy);
}

}  // namespace
}  // namespace cohort::store
