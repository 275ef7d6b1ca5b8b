// SqliteStore: the embedded Store backend, one SQLite database file in WAL mode, over the shared
// SQL store (sql/sql_store.h). Its own parts: the connections and commit mechanics, the series
// write path (group commit, summary pages: sqlite_ingest.cc), the history query and console text
// search (FTS5).
//
// Threading: every method is thread-safe. Writes go through one write connection guarded by a
// mutex, each call in one BEGIN IMMEDIATE transaction, except that concurrent Ingest and
// heartbeat calls are group-committed: those that arrive while a transaction is being written
// share the next one, each in its own savepoint, each answered after that commit
// (sqlite_group_commit.h). Reads use a small pool of read connections (each call in one read
// transaction, so it sees one consistent snapshot) and never wait behind a write. Several
// processes may open the same file; busy_timeout covers their contention.
//
// Space: the database is created with auto_vacuum=INCREMENTAL, so that pages the store no longer
// uses (deleted runs and versions, pruned records, compacted tails) can be given back to the file
// system (ReleaseFreeSpace, docs/operations.md "Disk space").
//
// Durability: WAL mode with synchronous=NORMAL (the default) makes a committed transaction
// survive a crash of the process; synchronous_full also fsyncs the WAL at every commit, so that
// it survives power loss (docs/operations.md, "Durability of the SQLite store").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "store/ingest_plan.h"
#include "store/sql/sql_store.h"
#include "store/sqlite/sqlite_checkpointer.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/sqlite_group_commit.h"
#include "store/sqlite/sqlite_series_cache.h"

namespace cohort::store {

struct SqliteOptions {
  std::string path;               // the database file; its directory must exist
  bool synchronous_full = false;  // PRAGMA synchronous=FULL instead of NORMAL
  int busy_timeout_ms = 5000;
  // Read connections kept open; when all are in use, a read waits up to 20 ms for one to come
  // back before it opens another (opening one parses the whole schema: a burst of reads opening
  // connections cost a fifth of the server's CPU under the fleet load, docs/reliability.md).
  int read_connections = 4;
  // Concurrent Ingest and heartbeat calls share transactions (sqlite_group_commit.h); false
  // gives each its own (URL option group_commit=off; for measurements).
  bool group_commit = true;
  // WAL checkpoints on a background thread (sqlite_checkpointer.h); false leaves them to
  // SQLite, in the committing call (URL option checkpoint=inline; for measurements).
  bool background_checkpoints = true;
  // Free pages are given back (ReleaseFreeSpace) once at least release_min_free_pages of them
  // and an eighth of the file, or release_many_free_pages whatever the file's size (a deletion
  // in a large file; what a restart left), are free. Tests lower them.
  int64_t release_min_free_pages = 256;     // 1 MB of 4 KB pages
  int64_t release_many_free_pages = 16384;  // 64 MB of 4 KB pages
};

class SqliteStore final : public SqlStore {
 public:
  // Opens (creating if needed) the database and brings its schema to the latest version.
  static Result<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);
  ~SqliteStore() override;

  // sqlite_ingest.cc
  Result<IngestResult> Ingest(const RunRef& ref, const std::string& label, const IngestBatch& batch,
                              int64_t now_ms) override;
  Result<std::vector<SeriesData>> QueryHistory(const HistoryQuery& query) override;
  // sqlite_store.cc
  Result<ConsoleIndex> IndexConsole(const ConsoleQuery& query, int64_t stride) override;
  // Free pages are reused by later writes (tail compaction frees and takes pages all the time),
  // so they are given back only when many (SqliteOptions::release_min_free_pages and 1 in
  // kReleaseMinFreeShare of the file, or release_many_free_pages), then all of them, over as many
  // calls as max_bytes makes it take; `stopping`: all of them now (up to max_bytes).
  // kReleaseSlicePages at a time, each slice in a write transaction of its own, the write mutex
  // let go for a moment between slices (writes wait for a slice, not for the call). Returns the
  // bytes the file shrank by (whole pages: a pointer-map page past its new end may go too).
  Result<int64_t> ReleaseFreeSpace(int64_t max_bytes, bool stopping) override
      COHORT_EXCLUDES(write_mu_);
  static constexpr int64_t kReleaseMinFreeShare = 8;
  // 1 MB of 4 KB pages: fewer WAL frames than the checkpointer's kStartFrames.
  static constexpr int64_t kReleaseSlicePages = 256;

  // Transactions and calls of the group commit so far (tests, benchmarks).
  sqlite::GroupCommit::Counters group_counters() const { return group_.counters(); }
  const sqlite::Checkpointer& checkpointer() const { return checkpointer_; }
  // Read connections opened so far, the pool's first ones included (tests).
  int64_t readers_opened() COHORT_EXCLUDES(pool_mu_) {
    MutexLock lock(&pool_mu_);
    return readers_opened_;
  }
  // Hits, misses and clears of the write connection's series cache so far (tests, benchmarks).
  sqlite::SeriesCache::Stats series_cache_stats() COHORT_EXCLUDES(write_mu_) {
    MutexLock lock(&write_mu_);
    return series_cache_.stats();
  }

 protected:
  Status Run(Access access, const Work& work) override;
  std::string ConsoleTextCondition(const std::string& text, sql::Params* params) const override;
  std::string RunTagCondition(const RunPredicate& p, sql::Params* params) const override;
  std::string RunJsonCondition(const RunPredicate& p, sql::Params* params) const override;
  RunJsonSortExprs JsonSortExprs(RunSortField field, const std::vector<std::string>& path,
                                 sql::Params* params) const override;
  Status AfterImport(sql::Conn& conn) override;
  Result<int64_t> AfterWriterFinished(sql::Conn& conn, int64_t writer_pk) override;

 private:
  // A read connection borrowed from the pool, returned when the lease goes away. The borrowing
  // thread has the connection to itself until then.
  class ReadLease {
   public:
    ReadLease(SqliteStore* owner, std::unique_ptr<sqlite::Db> db)
        : owner_(owner), db_(std::move(db)) {}
    ~ReadLease();
    ReadLease(ReadLease&&) = default;
    sqlite::Db* operator->() { return db_.get(); }
    sqlite::Db* get() { return db_.get(); }

   private:
    SqliteStore* owner_;
    std::unique_ptr<sqlite::Db> db_;
  };

  static constexpr size_t kMaxGroup = 256;  // calls per group-commit transaction at most

  explicit SqliteStore(SqliteOptions options)
      : SqlStore(sql::Engine::kSqlite), options_(std::move(options)) {}
  Result<std::unique_ptr<sqlite::Db>> OpenConnection(bool writer);
  Result<ReadLease> AcquireReader();

  // The body of Ingest inside a (group's) write transaction: false when the batch is a
  // duplicate and its changes are to be rolled back (sqlite_ingest.cc).
  // What it did to run_cache_ goes into `note`, for Ingest to settle after the commit.
  Result<bool> IngestInTxn(sqlite::Db* db, const RunRef& ref, const std::string& label,
                           IngestPlan* plan, int64_t now_ms, IngestResult* out,
                           RunIngestCache::Note* note);

  SqliteOptions options_;
  Mutex write_mu_;
  std::unique_ptr<sqlite::Db> writer_ COHORT_GUARDED_BY(write_mu_);
  // The file's auto_vacuum is INCREMENTAL, and its page size (set by Open).
  bool incremental_vacuum_ COHORT_GUARDED_BY(write_mu_) = false;
  int64_t page_size_ COHORT_GUARDED_BY(write_mu_) = 4096;
  // ReleaseFreeSpace found many free pages and gives them back until none is left.
  bool releasing_ COHORT_GUARDED_BY(write_mu_) = false;
  // The series rows' tail state for Ingest (also told by group_ how its transactions end).
  sqlite::SeriesCache series_cache_ COHORT_GUARDED_BY(write_mu_);
  sqlite::GroupCommit group_{&write_mu_, &writer_, options_.group_commit ? kMaxGroup : 1,
                             &series_cache_};  // Ingest, heartbeats
  sqlite::Checkpointer checkpointer_;  // WAL checkpoints off the write path; stops first
  Mutex pool_mu_;
  CondVar reader_returned_;  // signalled under pool_mu_ when a lease ends
  std::vector<std::unique_ptr<sqlite::Db>> idle_readers_ COHORT_GUARDED_BY(pool_mu_);
  int leased_readers_ COHORT_GUARDED_BY(pool_mu_) = 0;
  int64_t readers_opened_ COHORT_GUARDED_BY(pool_mu_) = 0;
};

}  // namespace cohort::store
