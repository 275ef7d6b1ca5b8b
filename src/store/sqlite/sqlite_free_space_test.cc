// SqliteStore gives free pages back to the file system (auto_vacuum=INCREMENTAL,
// ReleaseFreeSpace): after a deleted run the file shrinks, and what is left reads back unchanged.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/ingest_batch.h"
#include "store/sqlite/raw_db_for_test.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_conformance.h"
#include "store/temp_dir_for_test.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

// `rows` rows of key "noise" at server-assigned steps, values that do not compress (a run of
// 200,000 takes ~1.6 MB, a few hundred pages).
IngestBatch NoiseRows(int64_t seq, int rows, std::mt19937_64* rng) {
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  IngestBatchBuilder b(seq);
  for (int i = 0; i < rows; ++i) b.AddHistoryRow(kAssignStep, 1, {{"noise", value(*rng)}});
  return b.Finish();
}

void LogNoise(SqliteStore* store, const RunRef& ref, int batches, std::mt19937_64* rng) {
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = ref}).ok());
  ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  for (int seq = 1; seq <= batches; ++seq) {
    ASSERT_TRUE(store->Ingest(ref, "w", NoiseRows(seq, 10000, rng), 1).ok());
  }
}

// The values of the run's "noise" series, read back in step order.
std::vector<double> ValuesOf(SqliteStore* store, const RunRef& ref) {
  Result<std::vector<SeriesData>> hist = store->QueryHistory(HistoryQuery{.run = ref});
  std::vector<double> out;
  if (!hist.ok() || hist->size() != 1) return out;
  for (const series::Point& p : (*hist)[0].points) out.push_back(p.value);
  return out;
}

TEST(SqliteFreeSpaceTest, ADeletedRunsPagesGoBackToTheFileSystem) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  std::mt19937_64 rng(7);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  LogNoise(store.get(), RunRef{"e", "p", "kept"}, 3, &rng);
  LogNoise(store.get(), RunRef{"e", "p", "gone"}, 20, &rng);
  const std::vector<double> kept = ValuesOf(store.get(), RunRef{"e", "p", "kept"});
  ASSERT_EQ(kept.size(), 30000u);
  RawDb raw(db);
  EXPECT_EQ(raw.Int("PRAGMA auto_vacuum"), 2);  // incremental
  // The free pages tail compaction leaves are few: kept for the next writes.
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t released, store->ReleaseFreeSpace(int64_t{1} << 30, false));
  EXPECT_EQ(released, 0);

  const int64_t pages = raw.Int("PRAGMA page_count");
  const int64_t page_size = raw.Int("PRAGMA page_size");
  ASSERT_TRUE(store->DeleteRun(RunRef{"e", "p", "gone"}).ok());
  const int64_t free_pages = raw.Int("PRAGMA freelist_count");
  ASSERT_GE(free_pages, SqliteOptions{}.release_min_free_pages);
  ASSERT_GE(free_pages * SqliteStore::kReleaseMinFreeShare, pages);

  // At most max_bytes per call, whole pages; what the file shrank by.
  COHORT_ASSERT_OK_AND_ASSIGN(released, store->ReleaseFreeSpace(10 * page_size, false));
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), free_pages - 10);
  EXPECT_EQ(released, (pages - raw.Int("PRAGMA page_count")) * page_size);
  EXPECT_GE(released, 10 * page_size);
  // Once started, the release goes on over later calls until no free page is left, though the
  // free pages are soon fewer than the threshold.
  int calls = 0;
  while (raw.Int("PRAGMA freelist_count") > 0 && calls < 1000) {
    COHORT_ASSERT_OK_AND_ASSIGN(released, store->ReleaseFreeSpace(10 * page_size, false));
    ASSERT_GT(released, 0) << "call " << calls << ": " << raw.Int("PRAGMA freelist_count")
                           << " free pages kept";
    ++calls;
  }
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), 0);
  EXPECT_LE(raw.Int("PRAGMA page_count"), pages - free_pages);
  EXPECT_EQ(raw.One("PRAGMA integrity_check"), "ok");
  // The pages moved into the holes still read back as the kept run's points.
  EXPECT_EQ(ValuesOf(store.get(), RunRef{"e", "p", "kept"}), kept);

  // Done: a few pages freed later are kept again.
  LogNoise(store.get(), RunRef{"e", "p", "small"}, 1, &rng);
  ASSERT_TRUE(store->DeleteRun(RunRef{"e", "p", "small"}).ok());
  ASSERT_GT(raw.Int("PRAGMA freelist_count"), 0);
  COHORT_ASSERT_OK_AND_ASSIGN(released, store->ReleaseFreeSpace(int64_t{1} << 30, false));
  EXPECT_EQ(released, 0);

  // The file itself shrinks once the WAL is checkpointed (here: the last connection closes).
  const int64_t left = raw.Int("PRAGMA page_count");
  raw.Close();
  store.reset();
  EXPECT_EQ(int64_t(fs::file_size(db)), left * page_size);
}

TEST(SqliteFreeSpaceTest, ManyFreePagesAreGivenBackWhateverTheirShareOfTheFile) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  std::mt19937_64 rng(10);
  // A large file, as far as the share is concerned: a deletion of a tenth of it.
  SqliteOptions options{.path = db, .release_min_free_pages = 1 << 30};
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(options));
    LogNoise(store.get(), RunRef{"e", "p", "kept"}, 20, &rng);
    LogNoise(store.get(), RunRef{"e", "p", "gone"}, 2, &rng);
    ASSERT_TRUE(store->DeleteRun(RunRef{"e", "p", "gone"}).ok());
  }
  RawDb raw(db);
  const int64_t free_pages = raw.Int("PRAGMA freelist_count");
  ASSERT_GT(free_pages, 20);
  ASSERT_LT(free_pages * SqliteStore::kReleaseMinFreeShare, raw.Int("PRAGMA page_count"));
  {
    options.release_many_free_pages = free_pages + 1;  // not yet many
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(options));
    COHORT_ASSERT_OK_AND_ASSIGN(int64_t released, store->ReleaseFreeSpace(int64_t{1} << 30, false));
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), free_pages);
  // Reopened (a restart), the store starts from what the file holds: many, so all of them.
  options.release_many_free_pages = free_pages;
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(options));
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t released, store->ReleaseFreeSpace(int64_t{1} << 30, false));
  EXPECT_GE(released, free_pages * raw.Int("PRAGMA page_size"));
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), 0);
}

TEST(SqliteFreeSpaceTest, StoppingGivesBackEvenAFewFreePages) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  std::mt19937_64 rng(8);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  LogNoise(store.get(), RunRef{"e", "p", "kept"}, 3, &rng);
  const std::vector<double> kept = ValuesOf(store.get(), RunRef{"e", "p", "kept"});
  LogNoise(store.get(), RunRef{"e", "p", "gone"}, 1, &rng);
  ASSERT_TRUE(store->DeleteRun(RunRef{"e", "p", "gone"}).ok());
  RawDb raw(db);
  const int64_t free_pages = raw.Int("PRAGMA freelist_count");
  ASSERT_GT(free_pages, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t released, store->ReleaseFreeSpace(int64_t{1} << 30, false));
  EXPECT_EQ(released, 0);  // too few while the server runs
  const int64_t page_size = raw.Int("PRAGMA page_size");
  COHORT_ASSERT_OK_AND_ASSIGN(released, store->ReleaseFreeSpace(2 * page_size, true));
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), free_pages - 2);  // max_bytes still holds
  COHORT_ASSERT_OK_AND_ASSIGN(released, store->ReleaseFreeSpace(int64_t{1} << 30, true));
  EXPECT_GE(released, (free_pages - 2) * page_size);
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), 0);
  EXPECT_EQ(ValuesOf(store.get(), RunRef{"e", "p", "kept"}), kept);
}

TEST(SqliteFreeSpaceTest, OpeningAStoreTakesNoWriteLock) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  { COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db})); }
  RawDb raw(db);  // another process writing
  ASSERT_EQ(raw.Exec("BEGIN IMMEDIATE"), SQLITE_OK);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store,
                              SqliteStore::Open(SqliteOptions{.path = db, .busy_timeout_ms = 0}));
  RawDb reader(db);
  EXPECT_EQ(reader.Int("PRAGMA auto_vacuum"), 2);
  raw.Exec("ROLLBACK");
}

TEST(SqliteFreeSpaceTest, AFileMadeWithoutAutoVacuumKeepsItsPagesWithoutAnError) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  {
    RawDb raw(db);  // a file that had a table before the store first opened it
    ASSERT_EQ(raw.Exec("CREATE TABLE before_cohort (x); DROP TABLE before_cohort"), SQLITE_OK);
  }
  std::mt19937_64 rng(9);
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  LogNoise(store.get(), RunRef{"e", "p", "gone"}, 20, &rng);
  ASSERT_TRUE(store->DeleteRun(RunRef{"e", "p", "gone"}).ok());
  RawDb raw(db);
  EXPECT_EQ(raw.Int("PRAGMA auto_vacuum"), 0);
  const int64_t free_pages = raw.Int("PRAGMA freelist_count");
  ASSERT_GE(free_pages, SqliteOptions{}.release_min_free_pages);
  for (bool stopping : {false, true}) {
    COHORT_ASSERT_OK_AND_ASSIGN(int64_t released,
                                store->ReleaseFreeSpace(int64_t{1} << 30, stopping));
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(raw.Int("PRAGMA freelist_count"), free_pages);
}

}  // namespace
}  // namespace cohort::store
