#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "store/sqlite/sqlite_schema.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

// A temporary directory removed with everything in it when the object goes away.
// Single-threaded.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cohort-store-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    path_ = made ? fs::path(made) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

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

// A raw connection to inspect or lock the file from outside the store. Single-threaded.
struct RawDb {
  explicit RawDb(const fs::path& path) { sqlite3_open(path.c_str(), &db); }
  ~RawDb() { sqlite3_close(db); }
  std::string One(const char* sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(st);
    return out;
  }
  int Exec(const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }
  sqlite3* db = nullptr;
};

TEST(SqliteStoreTest, OpenAppliesMigrationsAndWal) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  RawDb raw(db);
  EXPECT_EQ(raw.One("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.One("SELECT max(version) FROM schema_version"),
            std::to_string(sqlite::LatestSchemaVersion()));
  EXPECT_EQ(raw.One("SELECT count(*) FROM schema_version"), "1");
}

TEST(SqliteStoreTest, ReopenDoesNotMigrateAgain) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  { COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db})); }
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  RawDb raw(db);
  EXPECT_EQ(raw.One("SELECT count(*) FROM schema_version"), "1");
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

TEST(SqliteStoreTest, IngestFailingMidBatchRollsBackEarlierSeries) {
  TempDir dir;
  const fs::path db = dir.path() / "a.db";
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(SqliteOptions{.path = db}));
  const RunRef ref{"e", "p", "r"};
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = ref}).ok());
  ASSERT_TRUE(store->JoinWriter(ref, WriterJoin{.label = "w"}).ok());
  auto batch = [](int64_t seq) {
    IngestBatch b{.seq = seq};
    b.rows.push_back(HistoryRow{.step = -1, .time_ms = 1, .values = {{"a", 1}, {"b", 2}}});
    b.console.push_back(ConsoleLine{.time_ms = 1, .text = "x"});
    return b;
  };
  ASSERT_TRUE(store->Ingest(ref, "w", batch(1), 1).ok());
  {
    // Damage the head chunk of "b": "a" is appended first, then "b" fails.
    RawDb raw(db);
    ASSERT_EQ(raw.Exec("UPDATE chunks SET data = x'00' WHERE series_pk = "
                       "(SELECT pk FROM series WHERE key = 'b')"),
              SQLITE_OK);
  }
  auto failed = store->Ingest(ref, "w", batch(2), 2);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kCorruption);

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
