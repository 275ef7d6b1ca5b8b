#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "series/tail.h"
#include "store/dump_format.h"
#include "store/sql/sql_schema.h"
#include "store/sqlite/raw_db_for_test.h"
#include "store/store_conformance.h"
#include "store/temp_dir_for_test.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

// A fresh database file in its own temporary directory per test. Single-threaded.
class SqliteTarget : public StoreTarget {
 public:
  Result<std::unique_ptr<Store>> Open() override {
    COHORT_ASSIGN_OR_RETURN(auto store,
                            SqliteStore::Open(SqliteOptions{.path = (dir_.path() / "t.db")}));
    return std::unique_ptr<Store>(std::move(store));
  }

 private:
  TempDir dir_;
};

COHORT_INSTANTIATE_STORE_CONFORMANCE(
    Sqlite, (StoreBackend{"sqlite", [] { return std::make_unique<SqliteTarget>(); }}));

const RunRef kRef{"e", "p", "r"};

// A store in `db` holding the run kRef with its writer "w" joined.
Result<std::unique_ptr<SqliteStore>> OpenWithWriter(const fs::path& db) {
  COHORT_ASSIGN_OR_RETURN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  COHORT_RETURN_IF_ERROR(store->UpsertRun(RunUpsert{.ref = kRef}).status());
  COHORT_RETURN_IF_ERROR(store->JoinWriter(kRef, WriterJoin{.label = "w"}).status());
  return store;
}

// A batch of `rows` history rows of key "m" at server-assigned steps, values 0, 1, ...
IngestBatch Rows(int64_t seq, int rows) {
  IngestBatchBuilder b(seq);
  for (int i = 0; i < rows; ++i) b.AddHistoryRow(kAssignStep, 1, {{"m", double(i)}});
  return b.Finish();
}

TEST(SqliteStoreTest, OpenAppliesMigrationsAndWal) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  RawDb raw(db);
  EXPECT_EQ(raw.One("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.One("SELECT max(version) FROM schema_version"),
            std::to_string(sql::LatestSchemaVersion()));
  EXPECT_EQ(raw.One("SELECT count(*) FROM schema_version"), "1");
}

// Anyone may post login tokens and end sessions: an unknown one is refused by a read, never a
// write transaction (each waited for the store's writer lock, ingest's group commits included,
// and held them up in turn). With another process holding the write lock it answers at once.
TEST(SqliteStoreTest, UnknownLoginTokensAndSessionsTakeNoWriteLock) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  { COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db})); }
  COHORT_ASSERT_OK_AND_ASSIGN(auto store,
                              SqliteStore::Open(SqliteOptions{.path = db, .busy_timeout_ms = 0}));
  RawDb raw(db);  // another process writing
  ASSERT_EQ(raw.Exec("BEGIN IMMEDIATE"), SQLITE_OK);
  const SessionRecord session{.hash = std::string(64, 'b'), .created_ms = 1, .expires_ms = 2};
  auto redeemed = store->RedeemLoginToken(std::string(64, 'a'), session, 1);
  EXPECT_EQ(redeemed.status().code(), StatusCode::kNotFound) << redeemed.status().ToString();
  Status ended = store->DeleteSession(std::string(64, 'c'));
  EXPECT_EQ(ended.code(), StatusCode::kNotFound) << ended.ToString();
  raw.Exec("ROLLBACK");
}

TEST(SqliteStoreTest, ReopenDoesNotMigrateAgain) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  { COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db})); }
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT count(*) FROM schema_version"), "1");
}

TEST(SqliteStoreTest, ImportedSeriesGetSummaryPages) {
  TempDir dir;
  const RunRef ref{"e", "p", "r"};
  COHORT_ASSERT_OK_AND_ASSIGN(auto from,
                              SqliteStore::Open(SqliteOptions{.path = dir.path() / "from.db"}));
  ASSERT_TRUE(from->UpsertRun(RunUpsert{.ref = ref}).ok());
  ASSERT_TRUE(from->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  for (int seq = 1; seq <= 5; ++seq) ASSERT_TRUE(from->Ingest(ref, "w", Rows(seq, 10000), 1).ok());
  const fs::path to_path = dir.path() / "to.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto to, SqliteStore::Open(SqliteOptions{.path = to_path}));
  std::vector<DumpRecord> records;
  ASSERT_TRUE(from->Export([&](const DumpRecord& rec) {
                    records.push_back(rec);
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_TRUE(to->Import(records, DumpHeader{.source = "sqlite"}).ok());
  ASSERT_TRUE(to->FinishImport().ok());
  RawDb raw(to_path);
  EXPECT_EQ(raw.One("SELECT paged_upto = tail_idx AND paged_upto > 0 FROM series"), "1");
  EXPECT_EQ(raw.One("SELECT sum((length(data) - 4) / 104) FROM chunk_pages"),
            raw.One("SELECT count(*) FROM chunks WHERE idx < (SELECT paged_upto FROM series)"));
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, to->QueryHistory(HistoryQuery{.run = ref, .series = {.buckets = 50}}));
  ASSERT_EQ(hist.size(), 1u);
  int64_t total = 0;
  for (const series::Bucket& bk : hist[0].buckets) total += bk.count;
  EXPECT_EQ(total, 50000);
}

TEST(SqliteStoreTest, SealedChunksAreListedInSummaryPages) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  for (int seq = 1; seq <= 10; ++seq)
    ASSERT_TRUE(store->Ingest(ref, "w", Rows(seq, 10000), 1).ok());
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT paged_upto = tail_idx FROM series"), "1");
  EXPECT_EQ(raw.One("SELECT sum((length(data) - 4) / 104) FROM chunk_pages"),
            raw.One("SELECT count(*) FROM chunks WHERE idx < (SELECT paged_upto FROM series)"));
  EXPECT_EQ(raw.One("SELECT min(min_step) || ',' || max(max_step) FROM chunk_pages"),
            raw.One("SELECT min(min_step) || ',' || max(max_step) FROM chunks WHERE idx < "
                    "(SELECT paged_upto FROM series)"));
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, store->QueryHistory(HistoryQuery{.run = ref, .series = {.buckets = 98}}));
  ASSERT_EQ(hist.size(), 1u);
  int64_t total = 0;
  for (const series::Bucket& bk : hist[0].buckets) total += bk.count;
  EXPECT_EQ(total, 100000);
  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store->QueryHistory(
                HistoryQuery{.run = ref, .series = {.min_step = 4000, .max_step = 4999}}));
  ASSERT_EQ(hist[0].points.size(), 1000u);
  EXPECT_EQ(hist[0].points.front().step, 4000);
}

// A summary page damaged on disk (here the first chunk's max made +Infinity) was served as
// stored: every bucketed chart showed a value the run never logged. Pages carry a CRC-32C; a
// damaged one is read from its chunks' rows, and rebuilt from them when chunks are added to it.
TEST(SqliteStoreTest, ADamagedSummaryPageIsReadFromTheChunkRows) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  for (int seq = 1; seq <= 2; ++seq) ASSERT_TRUE(store->Ingest(ref, "w", Rows(seq, 10000), 1).ok());
  auto whole = [&] {
    auto hist = store->QueryHistory(HistoryQuery{.run = ref, .series = {.buckets = 1}});
    EXPECT_TRUE(hist.ok()) << hist.status().ToString();
    EXPECT_EQ(hist->size(), 1u);
    EXPECT_EQ((*hist)[0].buckets.size(), 1u);
    return (*hist)[0].buckets.at(0);
  };
  const series::Bucket before = whole();
  ASSERT_EQ(before.max, 9999.0);
  RawDb raw(db);
  ASSERT_NE(raw.One("SELECT paged_upto % 32 FROM series"), "0")  // the last page has room
      << raw.One("SELECT paged_upto FROM series");
  // Bytes 65-72 of an entry are its max (little-endian IEEE): +Infinity, in the last page.
  ASSERT_EQ(raw.Exec("UPDATE chunk_pages SET data = CAST(substr(data, 1, 64) || "
                     "x'000000000000F07F' || substr(data, 73) AS BLOB) WHERE page = "
                     "(SELECT max(page) FROM chunk_pages)"),
            SQLITE_OK);
  ASSERT_EQ(raw.One("SELECT count(*) FROM chunk_pages WHERE hex(substr(data, 65, 8)) = "
                    "'000000000000F07F'"),
            "1");
  const series::Bucket damaged = whole();
  EXPECT_EQ(damaged.max, 9999.0);
  EXPECT_EQ(damaged.count, before.count);
  EXPECT_EQ(damaged.sum, before.sum);
  // More chunks sealed into the damaged page rebuild it from the rows, checksum and all.
  for (int seq = 3; seq <= 6; ++seq) ASSERT_TRUE(store->Ingest(ref, "w", Rows(seq, 10000), 1).ok());
  EXPECT_EQ(whole().max, 9999.0);
  EXPECT_EQ(whole().count, 60000);
  EXPECT_EQ(raw.One("SELECT count(*) FROM chunk_pages WHERE hex(substr(data, 65, 8)) = "
                    "'000000000000F07F'"),
            "0");
  EXPECT_EQ(raw.One("SELECT sum((length(data) - 4) / 104) FROM chunk_pages"),
            raw.One("SELECT count(*) FROM chunks WHERE idx < (SELECT paged_upto FROM series)"));
}

TEST(SqliteStoreTest, FinishingAWriterSealsItsTails) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "other"}).ok());
  int64_t step = 0;
  for (int seq = 1; seq <= 25; ++seq) {  // 25 batches of 90 rows: a tail of small chunks
    IngestBatchBuilder b(seq), first_rows(seq);  // "other" gets the batch's first 3 rows
    for (int i = 0; i < 90; ++i, ++step) {
      const std::initializer_list<IngestBatchBuilder::Cell> cells = {
          {"acc", double(step % 1000) / 1000}, {"loss", step == 77 ? -0.0 : 1.0 / (1 + step)}};
      b.AddHistoryRow(step, 1000 + 10 * step, cells);
      if (i < 3) first_rows.AddHistoryRow(step, 1000 + 10 * step, cells);
    }
    ASSERT_TRUE(store->Ingest(ref, "w", b.Finish(), 1).ok());
    ASSERT_TRUE(store->Ingest(ref, "other", first_rows.Finish(), 1).ok());
  }
  RawDb raw(db);
  const std::string other_chunks = raw.One(
      "SELECT count(*) FROM chunks WHERE series_pk IN (SELECT s.pk FROM series s JOIN writers w "
      "ON w.pk = s.writer_pk WHERE w.label = 'other')");
  ASSERT_NE(raw.One("SELECT min(tail_chunks) FROM series"), "0");
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_before,
                              store->QueryHistory(HistoryQuery{.run = ref, .series = {.limit = 100000}}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto buckets_before,
                              store->QueryHistory(HistoryQuery{.run = ref, .series = {.buckets = 7}}));

  ASSERT_TRUE(store->FinishWriter(ref, "w", RunState::kFinished, 0, 5).ok());
  // w's series: no tail, every chunk paged and inside one 1,024-step window; the other writer's
  // series untouched.
  EXPECT_EQ(raw.One("SELECT group_concat(tail_chunks || '/' || tail_count || '/' || "
                    "(next_idx = tail_idx) || '/' || (paged_upto = tail_idx)) FROM series s JOIN "
                    "writers w ON w.pk = s.writer_pk WHERE w.label = 'w'"),
            "0/0/1/1,0/0/1/1");
  EXPECT_EQ(raw.One("SELECT count(*) FROM chunks c JOIN series s ON s.pk = c.series_pk JOIN "
                    "writers w ON w.pk = s.writer_pk WHERE w.label = 'w'"),
            "6");  // 2,250 steps: windows [0, 1024), [1024, 2048), [2048, 2250) per key
  EXPECT_EQ(raw.One("SELECT count(*) FROM chunks c JOIN series s ON s.pk = c.series_pk JOIN "
                    "writers w ON w.pk = s.writer_pk WHERE w.label = 'w' AND "
                    "c.min_step / 1024 != c.max_step / 1024"),
            "0");
  EXPECT_EQ(raw.One("SELECT count(*) FROM chunks WHERE series_pk IN (SELECT s.pk FROM series s "
                    "JOIN writers w ON w.pk = s.writer_pk WHERE w.label = 'other')"),
            other_chunks);
  COHORT_ASSERT_OK_AND_ASSIGN(auto raw_after,
                              store->QueryHistory(HistoryQuery{.run = ref, .series = {.limit = 100000}}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto buckets_after,
                              store->QueryHistory(HistoryQuery{.run = ref, .series = {.buckets = 7}}));
  ASSERT_EQ(raw_after.size(), raw_before.size());
  for (size_t s = 0; s < raw_after.size(); ++s) {
    ASSERT_EQ(raw_after[s].points.size(), raw_before[s].points.size());
    for (size_t i = 0; i < raw_after[s].points.size(); ++i) {
      const series::Point& a = raw_after[s].points[i];
      const series::Point& b = raw_before[s].points[i];
      ASSERT_TRUE(a.step == b.step && a.time_ms == b.time_ms &&
                  std::memcmp(&a.value, &b.value, 8) == 0)
          << raw_after[s].key << " point " << i;
    }
    ASSERT_EQ(buckets_after[s].buckets.size(), buckets_before[s].buckets.size());
    for (size_t i = 0; i < buckets_after[s].buckets.size(); ++i) {
      EXPECT_EQ(buckets_after[s].buckets[i].count, buckets_before[s].buckets[i].count);
      EXPECT_EQ(buckets_after[s].buckets[i].min, buckets_before[s].buckets[i].min);
      EXPECT_EQ(buckets_after[s].buckets[i].max, buckets_before[s].buckets[i].max);
    }
  }
  // The writer comes back: a new tail after the sealed chunks.
  ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  IngestBatchBuilder b(100);
  b.AddHistoryRow(step, 1, {{"acc", 0.5}});
  ASSERT_TRUE(store->Ingest(ref, "w", b.Finish(), 1).ok());
  EXPECT_EQ(raw.One("SELECT tail_chunks FROM series WHERE key = 'acc' AND writer_pk = (SELECT pk "
                    "FROM writers WHERE label = 'w')"),
            "1");
}

// IngestInTxn groups cells by key matching each cell against the previous row's cell at the
// same position first: rows whose keys change order, skip keys or bring new ones must still put
// every value under its own key, at its row's step, in row order.
TEST(SqliteStoreTest, IngestGroupsCellsByKeyWhateverTheirOrderInTheRow) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  IngestBatchBuilder b(1);
  b.AddHistoryRow(kAssignStep, 10, {{"a", 1}, {"b", 2}});
  b.AddHistoryRow(kAssignStep, 11, {{"b", 3}, {"a", 4}});
  b.AddHistoryRow(5, 12, {{"c", 5}});
  b.AddHistoryRow(kAssignStep, 13, {{"a", 6}, {"c", 7}, {"b", 8}});
  b.AddSystemRow(20, {{"a", 9}});
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store->Ingest(ref, "w", b.Finish(), 1));
  EXPECT_EQ(r.points, 9);
  EXPECT_EQ(r.next_step, 7);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store->QueryHistory(HistoryQuery{
                                             .run = ref, .keys = {"a", "b", "c", "system/a"}}));
  std::map<std::string, std::vector<std::pair<int64_t, double>>> got;
  for (const SeriesData& h : hist) {
    for (const series::Point& p : h.points) got[h.key].push_back({p.step, p.value});
  }
  using P = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(got["a"], (P{{0, 1}, {1, 4}, {6, 6}}));
  EXPECT_EQ(got["b"], (P{{0, 2}, {1, 3}, {6, 8}}));
  EXPECT_EQ(got["c"], (P{{5, 5}, {6, 7}}));
  EXPECT_EQ(got["system/a"], (P{{20, 9}}));
  EXPECT_EQ(got.size(), 4u);
}

// Pruning goes in slices of 10,000 records, one transaction each; all of them go, and the
// writer's watermark is the highest pruned seq.
TEST(SqliteStoreTest, PruneBatchesRemovesMoreRecordsThanOneSlice) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  {
    RawDb raw(db);
    ASSERT_EQ(raw.Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE "
                       "i < 25000) INSERT INTO batches (writer_pk, seq, stored_ms) SELECT "
                       "(SELECT pk FROM writers), i, i FROM n"),
              SQLITE_OK);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t removed, store->PruneBatches(/*stored_before_ms=*/24001));
  EXPECT_EQ(removed, 24000);
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT count(*) || ',' || min(seq) FROM batches"), "1000,24001");
  EXPECT_EQ(raw.One("SELECT pruned_seq FROM writers"), "24000");
}

TEST(SqliteStoreTest, RefusesDatabaseFromNewerBuild) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  { COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db})); }
  {
    RawDb raw(db);
    ASSERT_EQ(raw.Exec("UPDATE schema_version SET version = 999"), SQLITE_OK);
  }
  auto opened = SqliteStore::Open(SqliteOptions{.path = db});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
}

TEST(SqliteStoreTest, ReadsDoNotWaitBehindAWriteTransaction) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto store, SqliteStore::Open(SqliteOptions{.path = db, .busy_timeout_ms = 3000}));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = {"e", "p", "r"}}).ok());
  RawDb other(db);
  ASSERT_EQ(other.Exec("BEGIN IMMEDIATE; UPDATE runs SET name = 'x'"), SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store->GetRun(RunRef{"e", "p", "r"}));
  EXPECT_EQ(run.name, "");  // the uncommitted write is invisible
  COHORT_ASSERT_OK_AND_ASSIGN(auto page, store->ListRuns(RunQuery{.entity = "e", .project = "p"}));
  EXPECT_EQ(page.total, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  ASSERT_EQ(other.Exec("ROLLBACK"), SQLITE_OK);
}

TEST(SqliteStoreTest, WriteWaitsForAnotherProcessThenSucceeds) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  RawDb other(db);
  ASSERT_EQ(other.Exec("BEGIN IMMEDIATE"), SQLITE_OK);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    other.Exec("COMMIT");
  });
  EXPECT_TRUE(store->UpsertRun(RunUpsert{.ref = {"e", "p", "r"}}).ok());
  release.join();
}

// A tail chunk that no longer decodes is kept as it is (reads skip and name it) and the series
// goes on: the compaction that met it failed every later batch of the writer (other keys'
// included, the agent retrying for ever), and the seal at finish failed the writer's finish.
TEST(SqliteStoreTest, ADamagedTailChunkIsKeptAndTheWriterGoesOnAndFinishes) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  auto batch = [](int64_t seq) {
    IngestBatchBuilder b(seq);
    b.AddHistoryRow(seq, 1, {{"a", double(seq)}, {"b", double(seq)}});
    return b.Finish();
  };
  auto damage = [&](const char* key, bool due) {
    RawDb raw(db);
    const std::string pk = "(SELECT pk FROM series WHERE key = '" + std::string(key) + "')";
    ASSERT_EQ(raw.Exec(("UPDATE chunks SET data = x'00' WHERE series_pk = " + pk +
                        " AND idx = (SELECT max(idx) FROM chunks WHERE series_pk = " + pk + ")")
                           .c_str()),
              SQLITE_OK);
    if (due) {  // its tail due for compaction at the next batch (series/tail.h)
      ASSERT_EQ(raw.Exec(("UPDATE series SET tail_chunks = " +
                          std::to_string(series::kMaxTailChunks) + " WHERE key = '" + key + "'")
                             .c_str()),
                SQLITE_OK);
    }
  };
  ASSERT_TRUE(store->Ingest(ref, "w", batch(1), 1).ok());
  store.reset();  // the series cache: the next open reads the rows as damaged
  damage("b", /*due=*/true);
  COHORT_ASSERT_OK_AND_ASSIGN(store, SqliteStore::Open(SqliteOptions{.path = db}));
  for (int64_t seq = 2; seq <= 4; ++seq) {
    auto stored = store->Ingest(ref, "w", batch(seq), seq);
    ASSERT_TRUE(stored.ok()) << seq << ": " << stored.status().ToString();
  }
  store.reset();
  damage("a", /*due=*/false);  // met by the seal at finish
  COHORT_ASSERT_OK_AND_ASSIGN(store, SqliteStore::Open(SqliteOptions{.path = db}));
  auto finished = store->FinishWriter(ref, "w", RunState::kFinished, 0, 10);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store->QueryHistory(HistoryQuery{.run = ref}));
  ASSERT_EQ(hist.size(), 2u);
  std::vector<int64_t> a_steps, b_steps;
  for (const auto& p : hist[0].points) a_steps.push_back(p.step);
  for (const auto& p : hist[1].points) b_steps.push_back(p.step);
  EXPECT_EQ(b_steps, (std::vector<int64_t>{2, 3, 4}));  // only the damaged chunk's point is gone
  EXPECT_EQ(hist[1].damaged.size(), 1u);
  EXPECT_EQ(a_steps, (std::vector<int64_t>{1, 2, 3}));  // step 4's chunk was the damaged one
  EXPECT_EQ(hist[0].damaged.size(), 1u);
  // The given-up chunks are paged as stored, so the chunks sealed after them are paged too.
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT group_concat(paged_upto = tail_idx AND tail_idx > 1) FROM series"),
            "1,1");
  EXPECT_EQ(raw.One("SELECT sum((length(data) - 4) / 104) FROM chunk_pages"),
            raw.One("SELECT count(*) FROM chunks"));
}

TEST(SqliteStoreTest, IngestFailingMidBatchRollsBackEarlierSeries) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, OpenWithWriter(db));
  const RunRef ref = kRef;
  auto batch = [](int64_t seq) {
    IngestBatchBuilder b(seq);
    b.AddHistoryRow(kAssignStep, 1, {{"a", 1}, {"b", 2}});
    b.AddConsole(ConsoleLine{.time_ms = 1, .text = "x"});
    return b.Finish();
  };
  ASSERT_TRUE(store->Ingest(ref, "w", batch(1), 1).ok());
  {
    // A fault on writing "b"'s series row (a trigger behind the store's back): "a" is appended
    // first, then "b" fails.
    RawDb raw(db);
    ASSERT_EQ(raw.Exec("CREATE TRIGGER fail_b BEFORE UPDATE ON series WHEN NEW.key = 'b' "
                       "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"),
              SQLITE_OK);
  }
  auto failed = store->Ingest(ref, "w", batch(2), 2);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("injected fault"), std::string::npos)
      << failed.status().ToString();

  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store->ListSeries(ref));
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].key, "a");
  EXPECT_EQ(series[0].count, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store->ListWriters(ref));
  EXPECT_EQ(writers[0].next_step, 1);
  EXPECT_EQ(writers[0].last_seq, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store->QueryConsole(ConsoleQuery{.run = ref}));
  EXPECT_EQ(lines.size(), 1u);
  COHORT_ASSERT_OK_AND_ASSIGN(auto a, store->QueryHistory(HistoryQuery{.run = ref, .keys = {"a"}}));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].points.size(), 1u);
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT count(*) FROM batches"), "1");
}

// Deleting a run deletes everything under it through the foreign keys (ON DELETE CASCADE),
// including SQLite's own tables (summary pages, the console's text index), and nothing of
// another run.
TEST(SqliteStoreTest, DeleteRunTakesEverythingUnderTheRunWithIt) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  for (const char* id : {"gone", "kept"}) {
    const RunRef ref{"e", "p", id};
    ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = ref}).ok());
    ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
    IngestBatch b = Rows(1, 5000);  // sealed chunks: summary pages
    b.console.push_back(ConsoleLine{.time_ms = 1, .text = std::string("line of ") + id});
    ASSERT_TRUE(store->Ingest(ref, "w", b, 1).ok());
    IngestBatch positioned;
    positioned.positions.push_back(StreamPosition{"history", 0, 1});
    ASSERT_TRUE(store->Ingest(ref, "w", positioned, 2).ok());
    ASSERT_TRUE(store->PutRunFile(ref, RunFile{.name = "f.txt", .data = "x"}).ok());
  }
  RawDb raw(db);
  auto counts = [&] {
    std::string out;
    for (const char* table : {"writers", "batches", "stream_positions", "series", "chunks",
                              "chunk_pages", "console", "run_files"}) {
      out += raw.One((std::string("SELECT count(*) FROM ") + table).c_str()) + " ";
    }
    return out;
  };
  const std::string before = counts();
  COHORT_ASSERT_OK(store->DeleteRun(RunRef{"e", "p", "gone"}));
  EXPECT_EQ(store->GetRun(RunRef{"e", "p", "gone"}).status().code(), StatusCode::kNotFound);
  // Each table held the same rows for both runs: half of them are left.
  std::string half;
  for (size_t i = 0, j; i < before.size(); i = j + 1) {
    j = before.find(' ', i);
    half += std::to_string(std::stoll(before.substr(i, j - i)) / 2) + " ";
  }
  EXPECT_EQ(counts(), half);
  EXPECT_NE(half.substr(0, 2), "0 ");
  EXPECT_EQ(raw.Exec("INSERT INTO console_fts (console_fts) VALUES ('integrity-check')"),
            SQLITE_OK)
      << sqlite3_errmsg(raw.db);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines,
                              store->QueryConsole(ConsoleQuery{.run = {"e", "p", "kept"},
                                                               .text = "line of"}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "line of kept");
  EXPECT_EQ(raw.One("SELECT count(*) FROM console_fts WHERE console_fts MATCH '\"of gone\"'"),
            "0");
}

TEST(SqliteStoreTest, OpenStoreAcceptsSqliteUrlsAndBarePaths) {
  TempDir dir;
  const fs::path abs = dir.path() / "nested" / "deeper" / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto s1, OpenStore("sqlite://" + abs.string()));
  EXPECT_TRUE(fs::exists(abs));
  const fs::path bare = dir.path() / "bare" / "b.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto s2, OpenStore(bare.string() + "?synchronous=full"));
  EXPECT_TRUE(fs::exists(bare));

  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  auto s3 = OpenStore("sqlite://rel/c.db");
  fs::current_path(cwd);
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_TRUE(fs::exists(dir.path() / "rel" / "c.db"));
}

TEST(SqliteStoreTest, OpenStoreRejectsUnknownSchemes) {
  EXPECT_EQ(OpenStore("mysql://x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("").status().code(), StatusCode::kInvalidArgument);
  TempDir dir;
  EXPECT_EQ(OpenStore((dir.path() / "a.db").string() + "?colour=red").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::store
