#include "store/sqlite/sqlite_series_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "series/tail.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_conformance.h"
#include "store/temp_dir_for_test.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;
using sqlite::SeriesCache;

SeriesCache::Entry EntryOf(int64_t pk, int64_t next_idx) {
  SeriesCache::Entry e;
  e.pk = pk;
  e.state.next_idx = next_idx;
  return e;
}

// ---- the layers, without a database ----

TEST(SeriesCacheTest, RolledBackCallLeavesNothingKeptCallIsCommittedWithItsGroup) {
  SeriesCache cache;
  cache.Put(1, "a", EntryOf(10, 1));
  ASSERT_NE(cache.Find(1, "a"), nullptr);  // the call sees its own entry
  cache.CallEnded(false);
  EXPECT_EQ(cache.Find(1, "a"), nullptr);

  cache.Put(1, "a", EntryOf(10, 2));
  cache.CallEnded(true);
  cache.Put(1, "a", EntryOf(10, 3));  // a later call of the same group, rolled back
  EXPECT_EQ(cache.Find(1, "a")->state.next_idx, 3);
  cache.CallEnded(false);
  EXPECT_EQ(cache.Find(1, "a")->state.next_idx, 2);
  cache.GroupEnded(true);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find(1, "a")->state.next_idx, 2);
  EXPECT_EQ(cache.Find(2, "a"), nullptr);  // another writer's series
}

TEST(SeriesCacheTest, LostTransactionDropsEveryEntry) {
  SeriesCache cache;
  cache.Put(1, "a", EntryOf(10, 1));
  cache.CallEnded(true);
  cache.GroupEnded(true);
  cache.Put(1, "a", EntryOf(10, 2));
  cache.Put(1, "b", EntryOf(11, 1));
  cache.CallEnded(true);
  cache.GroupEnded(false);  // COMMIT failed
  EXPECT_EQ(cache.Find(1, "a"), nullptr);
  EXPECT_EQ(cache.Find(1, "b"), nullptr);
  EXPECT_EQ(cache.size(), 0u);
}

// ---- the write connection: its own changes, others' ----

TEST(SeriesCacheTest, ChangesOfSeriesRowsByOthersDropEveryEntry) {
  TempDir dir;
  const std::string path = (dir.path() / "c.db").string();
  auto opened = sqlite::Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 5000);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<sqlite::Db> db = std::move(opened).value();
  ASSERT_TRUE(db->Exec("PRAGMA journal_mode=WAL; CREATE TABLE series (x INTEGER); "
                       "CREATE TABLE other (x INTEGER)")
                  .ok());
  SeriesCache cache;
  cache.Attach(db.get());
  auto fill = [&] {
    cache.Put(1, "a", EntryOf(10, 1));
    cache.CallEnded(true);
    cache.GroupEnded(true);
    ASSERT_EQ(cache.size(), 1u);
  };
  fill();
  {
    SeriesCache::OwnWrite own(&cache);  // Ingest's own statements
    ASSERT_TRUE(db->Exec("INSERT INTO series VALUES (1)").ok());
  }
  ASSERT_TRUE(db->Exec("INSERT INTO other VALUES (1)").ok());
  EXPECT_EQ(cache.size(), 1u);
  ASSERT_TRUE(db->Exec("UPDATE series SET x = 2").ok());  // e.g. a writer's tails sealed
  EXPECT_EQ(cache.size(), 0u);

  // Another connection's commit is seen when the next group begins.
  cache.GroupBegan(db.get());  // reads data_version: the first time, nothing is known
  cache.GroupEnded(true);
  fill();
  cache.GroupBegan(db.get());
  cache.GroupEnded(true);
  EXPECT_EQ(cache.size(), 1u);  // nothing changed in between
  {
    auto other = sqlite::Db::Open(path, SQLITE_OPEN_READWRITE, 5000);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Exec("INSERT INTO other VALUES (3)").ok());
  }
  cache.GroupBegan(db.get());
  EXPECT_EQ(cache.size(), 0u);
  cache.GroupEnded(true);
}

// ---- through the store ----

// The series rows' tail columns agree with the chunks (the cache never wrote a stale state):
// tail_count is the points of the chunks from tail_idx on, next_idx follows the last chunk.
std::string Inconsistent(const fs::path& db) {
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* st = nullptr;
  std::string out;
  sqlite3_prepare_v2(raw,
                     "SELECT key || ' ' || tail_count || ' ' || next_idx FROM series s WHERE "
                     "tail_count != (SELECT coalesce(sum(count), 0) FROM chunks c WHERE "
                     "c.series_pk = s.pk AND c.idx >= s.tail_idx) OR next_idx != (SELECT "
                     "coalesce(max(idx) + 1, 0) FROM chunks c WHERE c.series_pk = s.pk)",
                     -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    out += reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    out += "; ";
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return out;
}

IngestBatch Keys(int64_t seq, const std::vector<std::string>& keys, double v) {
  IngestBatchBuilder b(seq);
  std::vector<IngestBatchBuilder::Cell> row;
  for (const std::string& k : keys) row.emplace_back(k, v);
  b.AddHistoryRow(kAssignStep, 1, std::span<const IngestBatchBuilder::Cell>(row));
  return b.Finish();
}

std::vector<double> Values(Store* store, const RunRef& ref, const std::string& key) {
  auto h = store->QueryHistory(HistoryQuery{.run = ref, .keys = {key}});
  std::vector<double> out;
  if (!h.ok() || h->size() != 1) return {-1};
  for (const auto& p : (*h)[0].points) out.push_back(p.value);
  return out;
}

TEST(SqliteSeriesCacheTest, RestartedStoreReadsTheRowsBackAndContinuesThem) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  const RunRef ref{"e", "p", "r"};
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
    ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = ref}).ok());
    ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(store->Ingest(ref, "w", Keys(i, {"a", "b"}, i), i).ok());
    const SeriesCache::Stats s = store->series_cache_stats();
    EXPECT_EQ(s.misses, 2);  // the first batch's two series; then found in the cache
    EXPECT_EQ(s.hits, 4);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  // Enough batches to compact the tail (series/tail.h) from state read back after the restart.
  const int more = int(series::kMaxTailChunks) + 3;
  for (int i = 4; i < 4 + more; ++i) {
    ASSERT_TRUE(store->Ingest(ref, "w", Keys(i, {"a", "b"}, i), i).ok());
  }
  EXPECT_EQ(store->series_cache_stats().misses, 2);
  std::vector<double> want;
  for (int i = 1; i < 4 + more; ++i) want.push_back(i);
  EXPECT_EQ(Values(store.get(), ref, "a"), want);
  EXPECT_EQ(Values(store.get(), ref, "b"), want);
  // A duplicate changes nothing, in the table or the cache.
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult dup, store->Ingest(ref, "w", Keys(2, {"a"}, 99), 99));
  EXPECT_TRUE(dup.duplicate);
  ASSERT_TRUE(store->Ingest(ref, "w", Keys(4 + more, {"a"}, 4 + more), 1).ok());
  want.push_back(4 + more);
  EXPECT_EQ(Values(store.get(), ref, "a"), want);
  EXPECT_EQ(Inconsistent(db), "");
}

TEST(SqliteSeriesCacheTest, AnotherStoreOnTheSameFileAndDeletedRunsAreSeen) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  const RunRef ref{"e", "p", "r"};
  COHORT_ASSERT_OK_AND_ASSIGN(auto one, SqliteStore::Open(SqliteOptions{.path = db}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto two, SqliteStore::Open(SqliteOptions{.path = db}));
  ASSERT_TRUE(one->UpsertRun(RunUpsert{.ref = ref}).ok());
  ASSERT_TRUE(one->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  // The same writer's batches through two stores (two processes on one file), alternating.
  for (int i = 1; i <= 12; ++i) {
    Store* s = i % 3 == 0 ? two.get() : one.get();
    ASSERT_TRUE(s->Ingest(ref, "w", Keys(i, {"a"}, i), i).ok()) << i;
  }
  std::vector<double> want;
  for (int i = 1; i <= 12; ++i) want.push_back(i);
  EXPECT_EQ(Values(one.get(), ref, "a"), want);
  EXPECT_EQ(Inconsistent(db), "");

  // Deleting the run (cascading to its series) and making it again, whose writer and series
  // may get the same rowids: nothing of the old series' state is used.
  COHORT_ASSERT_OK(one->DeleteRun(ref));
  ASSERT_TRUE(one->UpsertRun(RunUpsert{.ref = ref}).ok());
  ASSERT_TRUE(one->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(one->Ingest(ref, "w", Keys(i, {"a"}, 10 * i), i).ok());
  EXPECT_EQ(Values(one.get(), ref, "a"), (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(Inconsistent(db), "");
}

// A group whose first batch appends "a" and then fails on "b" (a fault writing its row): the second
// batch of the same group, and the ones after, continue "a" from its state before the failed
// batch, not from what the rolled-back batch left in the cache.
TEST(SqliteSeriesCacheTest, BatchRolledBackInAGroupLeavesNothingInTheCache) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  const RunRef ref{"e", "p", "r"}, other{"e", "p", "o"};
  for (const RunRef& r : {ref, other}) {
    ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = r}).ok());
    ASSERT_TRUE(store->JoinWriter(r, WriterJoin{.label = "w"}).ok());
  }
  ASSERT_TRUE(store->Ingest(ref, "w", Keys(1, {"a", "b"}, 1), 1).ok());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  // A fault on writing "b"'s series row (a trigger behind the store's back).
  const std::string fault =
      "CREATE TRIGGER fail_b BEFORE UPDATE ON series WHEN NEW.key = 'b' "
      "BEGIN SELECT RAISE(ABORT, 'injected fault'); END";
  ASSERT_EQ(sqlite3_exec(raw, fault.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  // "a" alone: its state after this batch is in the cache.
  ASSERT_TRUE(store->Ingest(ref, "w", Keys(2, {"a"}, 2), 2).ok());
  const int64_t hits = store->series_cache_stats().hits;

  // Hold the write lock from outside so that the next calls queue up: the first one leads
  // (waiting for the lock), the two after it share the next transaction.
  ASSERT_EQ(sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  Status lead, failed, kept;
  std::thread t0([&] { lead = store->Ingest(other, "w", Keys(1, {"x"}, 1), 1).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread t1([&] { failed = store->Ingest(ref, "w", Keys(3, {"a", "b"}, 3), 3).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread t2([&] { kept = store->Ingest(ref, "w", Keys(4, {"a"}, 4), 4).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  t0.join();
  t1.join();
  t2.join();
  sqlite3_close(raw);
  EXPECT_TRUE(lead.ok()) << lead.ToString();
  EXPECT_NE(failed.message().find("injected fault"), std::string::npos) << failed.ToString();
  EXPECT_TRUE(kept.ok()) << kept.ToString();
  EXPECT_EQ(store->group_counters().largest_group, 2u);
  EXPECT_GT(store->series_cache_stats().hits, hits);  // the group used the cache

  ASSERT_TRUE(store->Ingest(ref, "w", Keys(5, {"a"}, 5), 5).ok());
  EXPECT_EQ(Values(store.get(), ref, "a"), (std::vector<double>{1, 2, 4, 5}));
  EXPECT_EQ(Inconsistent(db), "");
}

// A burst of concurrent reads (the alert engine's every 30 s) on a pool of two connections:
// reads wait briefly for a pooled connection, open one past that wait, and every read succeeds.
// How much the wait saves is timing, measured in the fleet benchmark (docs/reliability.md), not
// here: a count of opened connections was 14-19 without the wait and 8-10 with it on this
// machine, too close to assert without flakes (TSan measured 10).
TEST(SqliteReadPoolTest, BurstOfConcurrentReadsAllSucceed) {
  TempDir dir;
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto store,
      SqliteStore::Open(SqliteOptions{.path = dir.path() / "a.db", .read_connections = 2}));
  const RunRef ref{"e", "p", "r"};
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = ref}).ok());
  constexpr int kThreads = 16, kReads = 50;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kReads; ++i) {
        if (!store->GetRun(ref).ok()) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_LT(store->readers_opened(), kThreads * kReads);  // a pool, not a connection per read
}

}  // namespace
}  // namespace cohort::store
