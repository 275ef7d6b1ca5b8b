#include "store/sqlite/sqlite_recut.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

#include "series/chunk.h"
#include "store/sqlite/sqlite_old_layout_for_test.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_summary_pages.h"
#include "store/store_conformance.h"
#include "store/temp_dir_for_test.h"

namespace cohort::store::sqlite {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatchRows = 10000;  // the batch size of the benchmark's old databases
const RunRef kRun{"e", "p", "r"};

// Key "noisy": a decreasing curve with NaN, -0.0 and infinities sprinkled in; key "count":
// integers (exact sums, so bucket means compare exactly too). Both `points` steps from 0.
IngestBatch Batch(int64_t seq, int64_t first, int64_t rows) {
  IngestBatch b{.seq = seq};
  for (int64_t s = first; s < first + rows; ++s) {
    double v = 1.0 / (1.0 + 0.001 * double(s)) + 0.01 * std::sin(double(s) * 0.7);
    if (s % 997 == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (s % 1999 == 0) v = -0.0;
    if (s % 4999 == 0) v = -std::numeric_limits<double>::infinity();
    b.rows.push_back(HistoryRow{.step = s,
                                .time_ms = 1'700'000'000'000 + s,
                                .values = {{"noisy", v}, {"count", double(s)}}});
  }
  return b;
}

Result<std::unique_ptr<Db>> OpenDb(const fs::path& path) {
  return Db::Open(path.string(), SQLITE_OPEN_READWRITE, 5000);
}

// A store at `path` with run kRun, writer "w" and `points` steps of both keys in batches of
// kBatchRows rows, laid out as before version 4, plus a small batch in the tail.
void BuildOldStore(const fs::path& path, int64_t points) {
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
    COHORT_ASSERT_OK(store->UpsertRun(RunUpsert{.ref = kRun}).status());
    COHORT_ASSERT_OK(store->JoinWriter(kRun, WriterJoin{.label = "w"}).status());
    int64_t seq = 1;
    for (int64_t first = 0; first < points; first += kBatchRows) {
      COHORT_ASSERT_OK(
          store->Ingest(kRun, "w", Batch(seq++, first, std::min(kBatchRows, points - first)), 1)
              .status());
    }
  }
  COHORT_ASSERT_OK(MakeOldLayout(path.string(), kBatchRows));
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
  COHORT_ASSERT_OK(store->Ingest(kRun, "w", Batch(100, points, 300), 1).status());  // a tail
}

// Everything a reader can see of the run: raw points (one page and paged by 777), 1,000 buckets
// and a chunk-aligned grid of 4,096-step buckets, as text with doubles as bit patterns.
std::string Snapshot(Store* store, int64_t points) {
  std::string out;
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return std::to_string(u);
  };
  auto add_points = [&](const std::vector<SeriesData>& series) {
    for (const SeriesData& s : series) {
      out += s.key + "/" + s.writer + (s.more ? " more\n" : "\n");
      for (const series::Point& p : s.points) {
        out += std::to_string(p.step) + "," + std::to_string(p.time_ms) + "," + bits(p.value) + ";";
      }
      out += "\n";
    }
  };
  auto all = store->QueryHistory(HistoryQuery{.run = kRun, .series = {.limit = points + 1000}});
  if (!all.ok()) return "error: " + all.status().ToString();
  add_points(*all);
  for (int64_t after = INT64_MIN;;) {
    auto page = store->QueryHistory(HistoryQuery{
        .run = kRun, .keys = {"noisy"}, .series = {.limit = 777, .after_step = after}});
    if (!page.ok() || page->empty()) return "error: paging";
    add_points(*page);
    if (!(*page)[0].more) break;
    after = (*page)[0].points.back().step;
  }
  // Bucket extremes and first/last compare -0.0 equal to 0.0: a chunk summary read from the
  // `chunks` columns (unpaged chunks, and pages the version-4 migration built from them) has
  // lost the sign of a -0.0 (SQLite stores a REAL that is a whole number as an integer), while
  // decoded points and re-cut pages keep it.
  auto zbits = [&bits](double d) { return bits(d == 0 ? 0.0 : d); };
  for (int buckets : {1000, int((points + 4095) / 4096)}) {
    HistoryQuery q{.run = kRun, .series = {.buckets = buckets}};
    if (buckets != 1000) q.series.min_step = 0, q.series.max_step = buckets * int64_t{4096} - 1;
    auto b = store->QueryHistory(q);
    if (!b.ok()) return "error: " + b.status().ToString();
    for (const SeriesData& s : *b) {
      out += s.key + " buckets\n";
      for (const series::Bucket& k : s.buckets) {
        out += std::to_string(k.step_min) + "," + std::to_string(k.step_max) + "," +
               std::to_string(k.time_min) + "," + std::to_string(k.time_max) + "," +
               std::to_string(k.count) + "," + std::to_string(k.nan_count) + "," + zbits(k.min) +
               "," + zbits(k.max) + "," + zbits(k.first) + "," + zbits(k.last) + ",";
        // Sums of the integer key are exact in any grouping; the noisy key's may differ in the
        // last bits (summaries are added instead of points), compared to 1e-12 below.
        out += s.key == "count" ? bits(k.sum) : "~";
        out += ";";
      }
      out += "\n";
    }
  }
  return out;
}

// The bucket sums of the noisy key (1,000 buckets), for a relative comparison.
std::vector<double> NoisySums(Store* store) {
  std::vector<double> out;
  auto b = store->QueryHistory(
      HistoryQuery{.run = kRun, .keys = {"noisy"}, .series = {.buckets = 1000}});
  if (b.ok()) {
    for (const series::Bucket& k : (*b)[0].buckets) out.push_back(k.sum);
  }
  return out;
}

std::string ChunkRows(Db* db) {
  auto st = db->Prepare(
      "SELECT group_concat(series_pk || ':' || idx || ':' || pk, ' ') FROM (SELECT * FROM chunks "
      "ORDER BY series_pk, idx)");
  if (!st.ok()) return "";
  auto row = st->Step();
  if (!row.ok() || !*row) return "";
  return st->Text(0);
}

TEST(SqliteRecutTest, RecutOfOldLayoutAnswersIdenticallyWithNoStraddlingChunks) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  constexpr int64_t kPoints = 45000;
  BuildOldStore(path, kPoints);
  std::string before;
  std::vector<double> sums_before;
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
    before = Snapshot(store.get(), kPoints);
    sums_before = NoisySums(store.get());
  }
  ASSERT_EQ(before.rfind("error", 0), std::string::npos) << before.substr(0, 200);
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t straddling, CountStraddlingChunks(db.get()));
  ASSERT_GT(straddling, 0);

  RecutCounts counts;
  int64_t calls = 0;
  COHORT_ASSERT_OK(RecutAllSeries(
      db.get(),
      [&](int64_t done, int64_t total) {
        ++calls;
        EXPECT_EQ(total, 2);
        EXPECT_EQ(done, calls);
        return true;
      },
      &counts));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(counts.series, 2);
  EXPECT_EQ(counts.series_recut, 2);
  EXPECT_EQ(counts.points, 2 * (kPoints + 300));
  EXPECT_EQ(counts.straddling_after, 0);
  EXPECT_GT(counts.chunks_before, counts.chunks_after);
  COHORT_ASSERT_OK_AND_ASSIGN(straddling, CountStraddlingChunks(db.get()));
  EXPECT_EQ(straddling, 0);
  // Every chunk sealed and paged, the tail empty.
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t bad_rows, db->QueryInt("SELECT count(*) FROM series WHERE tail_idx <> next_idx OR "
                                     "paged_upto <> next_idx OR tail_count <> 0"));
  EXPECT_EQ(bad_rows, 0);

  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
  EXPECT_EQ(Snapshot(store.get(), kPoints), before);
  const std::vector<double> sums_after = NoisySums(store.get());
  ASSERT_EQ(sums_after.size(), sums_before.size());
  for (size_t i = 0; i < sums_after.size(); ++i) {
    if (std::isinf(sums_before[i])) {
      EXPECT_EQ(sums_after[i], sums_before[i]);
    } else {
      EXPECT_NEAR(sums_after[i], sums_before[i], 1e-12 * (1 + std::fabs(sums_before[i])));
    }
  }
  // Appending after a re-cut continues the series.
  COHORT_ASSERT_OK(store->Ingest(kRun, "w", Batch(101, kPoints + 300, 2000), 1).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist,
                              store->QueryHistory(HistoryQuery{.run = kRun, .keys = {"count"}}));
  ASSERT_EQ(hist[0].points.size(), size_t(kPoints + 2300));
  for (size_t i = 0; i < hist[0].points.size(); ++i) {
    ASSERT_EQ(hist[0].points[i].step, int64_t(i));
    ASSERT_EQ(hist[0].points[i].value, double(i));
  }
}

TEST(SqliteRecutTest, SecondRecutChangesNothing) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  BuildOldStore(path, 25000);
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  RecutCounts first;
  COHORT_ASSERT_OK(RecutAllSeries(db.get(), nullptr, &first));
  ASSERT_EQ(first.series_recut, 2);
  const std::string rows = ChunkRows(db.get());
  RecutCounts second;
  COHORT_ASSERT_OK(RecutAllSeries(db.get(), nullptr, &second));
  EXPECT_EQ(second.series, 2);
  EXPECT_EQ(second.series_recut, 0);
  EXPECT_EQ(ChunkRows(db.get()), rows);
}

TEST(SqliteRecutTest, SeriesWrittenByVersion4AreLeftAsTheyAre) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
    COHORT_ASSERT_OK(store->UpsertRun(RunUpsert{.ref = kRun}).status());
    COHORT_ASSERT_OK(store->JoinWriter(kRun, WriterJoin{.label = "w"}).status());
    COHORT_ASSERT_OK(store->Ingest(kRun, "w", Batch(1, 0, kBatchRows), 1).status());
    COHORT_ASSERT_OK(store->Ingest(kRun, "w", Batch(2, kBatchRows, kBatchRows), 1).status());
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  const std::string rows = ChunkRows(db.get());
  RecutCounts counts;
  COHORT_ASSERT_OK(RecutAllSeries(db.get(), nullptr, &counts));
  EXPECT_EQ(counts.series, 2);
  EXPECT_EQ(counts.series_recut, 0);
  EXPECT_EQ(ChunkRows(db.get()), rows);
}

// Stopped between series (as a kill between two transactions leaves it): the first series is
// re-cut, the second still has its old chunks, both answer as before; running again finishes.
TEST(SqliteRecutTest, InterruptedBetweenSeriesLeavesEachSeriesWholeAndResumes) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  constexpr int64_t kPoints = 25000;
  BuildOldStore(path, kPoints);
  std::string before;
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
    before = Snapshot(store.get(), kPoints);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  RecutCounts counts;
  Status s = RecutAllSeries(
      db.get(), [](int64_t, int64_t) { return false; }, &counts);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("1 of 2 series"), std::string::npos) << s.ToString();
  EXPECT_EQ(counts.series_recut, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t straddling_series,
      db->QueryInt("SELECT count(DISTINCT series_pk) FROM chunks WHERE min_step / 1024 <> "
                   "max_step / 1024"));
  EXPECT_EQ(straddling_series, 1);
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
    EXPECT_EQ(Snapshot(store.get(), kPoints), before);
  }
  RecutCounts rest;
  COHORT_ASSERT_OK(RecutAllSeries(db.get(), nullptr, &rest));
  EXPECT_EQ(rest.series_recut, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t straddling, CountStraddlingChunks(db.get()));
  EXPECT_EQ(straddling, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
  EXPECT_EQ(Snapshot(store.get(), kPoints), before);
}

// A server may keep ingesting while the re-cut runs on another connection: every point is
// stored exactly once and in order, whichever transaction came first.
TEST(SqliteRecutTest, RecutWhileIngestingKeepsEveryPointOnce) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  constexpr int64_t kPoints = 25000, kFirst = kPoints + 300, kBatches = 150, kRows = 100;
  BuildOldStore(path, kPoints);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = path}));
  Status ingest_status;
  std::thread writer([&] {
    for (int64_t b = 0; b < kBatches && ingest_status.ok(); ++b) {
      ingest_status =
          store->Ingest(kRun, "w", Batch(200 + b, kFirst + b * kRows, kRows), 1).status();
    }
  });
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  RecutCounts counts;
  Status recut = RecutAllSeries(db.get(), nullptr, &counts);
  writer.join();
  COHORT_ASSERT_OK(recut);
  COHORT_ASSERT_OK(ingest_status);
  EXPECT_EQ(counts.series_recut, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store->QueryHistory(HistoryQuery{.run = kRun}));
  ASSERT_EQ(hist.size(), 2u);
  for (const SeriesData& s : hist) {
    ASSERT_EQ(s.points.size(), size_t(kFirst + kBatches * kRows)) << s.key;
    for (size_t i = 0; i < s.points.size(); ++i) ASSERT_EQ(s.points[i].step, int64_t(i)) << s.key;
  }
  EXPECT_EQ(hist[0].key, "count");
  for (size_t i = 0; i < hist[0].points.size(); ++i) ASSERT_EQ(hist[0].points[i].value, double(i));
}

// A series with a chunk that fails its checksum is left whole: the damaged chunk stays visible
// in the answers' warnings instead of being dropped by a rewrite.
TEST(SqliteRecutTest, SeriesWithDamagedChunkIsLeftAsItIs) {
  TempDir dir;
  const fs::path path = dir.path() / "a.db";
  BuildOldStore(path, 25000);
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, OpenDb(path));
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t noisy,
                              db->QueryInt("SELECT pk FROM series WHERE key = 'noisy'"));
  COHORT_ASSERT_OK(db->Exec("UPDATE chunks SET data = zeroblob(40) WHERE series_pk = " +
                            std::to_string(noisy) + " AND idx = 3"));
  const std::string rows = ChunkRows(db.get());
  RecutCounts counts;
  COHORT_ASSERT_OK(RecutAllSeries(db.get(), nullptr, &counts));
  EXPECT_EQ(counts.series_damaged, 1);
  EXPECT_EQ(counts.series_recut, 1);  // the other series
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t noisy_chunks,
      db->QueryInt("SELECT count(*) FROM chunks WHERE series_pk = " + std::to_string(noisy)));
  EXPECT_EQ(noisy_chunks, 10 + 10 + 5 + 1);  // old chunks of batches of 10,000 rows + the tail
}

}  // namespace
}  // namespace cohort::store::sqlite
