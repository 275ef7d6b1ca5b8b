// SqliteStore: the embedded Store backend, one SQLite database file in WAL mode.
//
// Threading: every method is thread-safe. Writes go through one write connection guarded by a
// mutex, each call in one BEGIN IMMEDIATE transaction, except that concurrent Ingest and
// heartbeat calls are group-committed: those that arrive while a transaction is being written
// share the next one, each in its own savepoint, each answered after that commit
// (sqlite_group_commit.h). Reads use a small pool of read connections (each call in one read
// transaction, so it sees one consistent snapshot) and never wait behind a write. Several
// processes may open the same file; busy_timeout covers their contention.
//
// Durability: WAL mode with synchronous=NORMAL (the default) makes a committed transaction
// survive a crash of the process; synchronous_full also fsyncs the WAL at every commit, so that
// it survives power loss (docs/operations.md, "Durability of the SQLite store").
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_checkpointer.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/sqlite_group_commit.h"
#include "store/store.h"

namespace cohort::store {

struct SqliteOptions {
  std::string path;               // the database file; its directory must exist
  bool synchronous_full = false;  // PRAGMA synchronous=FULL instead of NORMAL
  int busy_timeout_ms = 5000;
  int read_connections = 4;  // idle read connections kept open
  // Concurrent Ingest and heartbeat calls share transactions (sqlite_group_commit.h); false
  // gives each its own (URL option group_commit=off; for measurements).
  bool group_commit = true;
  // WAL checkpoints on a background thread (sqlite_checkpointer.h); false leaves them to
  // SQLite, in the committing call (URL option checkpoint=inline; for measurements).
  bool background_checkpoints = true;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) the database and applies schema migrations.
  static Result<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);
  ~SqliteStore() override;

  Result<std::pair<RunRecord, bool>> UpsertRun(const RunUpsert& upsert) override;
  Result<RunRecord> GetRun(const RunRef& ref) override;
  Result<RunRecord> PatchRun(const RunRef& ref, const RunPatch& patch) override;
  Result<RunPage> ListRuns(const RunQuery& query) override;
  Result<std::vector<GroupInfo>> ListGroups(const std::string& entity,
                                            const std::string& project) override;
  Result<std::vector<ProjectInfo>> ListProjects(const std::string& entity) override;
  Status DeleteRun(const RunRef& ref) override;

  Result<WriterRecord> JoinWriter(const RunRef& ref, const WriterJoin& join) override;
  Result<std::vector<WriterRecord>> ListWriters(const RunRef& ref) override;
  Status Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) override;
  Result<int64_t> Heartbeats(const std::vector<HeartbeatUpdate>& updates) override;
  Result<WriterRecord> FinishWriter(const RunRef& ref, const std::string& label, RunState state,
                                    std::optional<int> exit_code, int64_t now_ms) override;
  Result<int64_t> MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) override;

  Result<IngestResult> Ingest(const RunRef& ref, const std::string& label, const IngestBatch& batch,
                              int64_t now_ms) override;
  Result<std::vector<SeriesInfo>> ListSeries(const RunRef& ref) override;
  Result<std::vector<SeriesData>> QueryHistory(const HistoryQuery& query) override;
  Result<std::vector<ConsoleLine>> QueryConsole(const ConsoleQuery& query) override;
  Result<ConsoleIndex> IndexConsole(const ConsoleQuery& query, int64_t stride) override;

  // sqlite_compat.cc
  Result<std::map<std::string, std::map<std::string, int64_t>>> ListStreamPositions(
      const RunRef& ref) override;
  Result<WriterRecord> RenameWriter(const RunRef& ref, const std::string& from,
                                    const std::string& to) override;
  Result<RunFile> PutRunFile(const RunRef& ref, const RunFile& file) override;
  Result<std::vector<RunFile>> ListRunFiles(const RunRef& ref) override;
  Result<RunFile> GetRunFile(const RunRef& ref, const std::string& name) override;

  Result<ViewRecord> CreateView(const ViewRecord& view) override;
  Result<std::vector<ViewRecord>> ListViews(const std::string& entity,
                                            const std::string& project) override;
  Result<ViewRecord> UpdateView(const ViewRecord& view) override;
  Status DeleteView(const std::string& entity, const std::string& project, int64_t id) override;

  Result<ApiKeyRecord> CreateApiKey(const ApiKeyRecord& key) override;
  Result<ApiKeyRecord> FindApiKey(const std::string& hash) override;
  Result<std::vector<ApiKeyRecord>> ListApiKeys(const std::string& entity) override;
  Status RevokeApiKey(const std::string& entity, int64_t id) override;
  Result<int64_t> CountApiKeys() override;
  Result<std::optional<ApiKeyRecord>> CreateFirstApiKey(const ApiKeyRecord& key) override;
  Result<int64_t> PruneBatches(int64_t stored_before_ms) override;

  // sqlite_sessions.cc
  Status CreateSession(const SessionRecord& s) override;
  Result<ApiKeyRecord> RedeemLoginToken(const std::string& token_hash, const SessionRecord& session,
                                        int64_t now_ms) override;
  Result<ApiKeyRecord> FindSession(const std::string& hash, int64_t now_ms) override;
  Status DeleteSession(const std::string& hash) override;
  Result<int64_t> PruneSessions(int64_t now_ms) override;

  // sqlite_dump.cc
  Status Export(const std::function<Status(const DumpRecord&)>& sink) override;
  Result<int64_t> Import(const std::vector<DumpRecord>& records, const DumpHeader& from) override;
  Status FinishImport() override;
  Result<DumpCounts> CountRows() override;

  // Transactions and calls of the group commit so far (tests, benchmarks).
  sqlite::GroupCommit::Counters group_counters() const { return group_.counters(); }
  const sqlite::Checkpointer& checkpointer() const { return checkpointer_; }

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

  explicit SqliteStore(SqliteOptions options) : options_(std::move(options)) {}
  Result<std::unique_ptr<sqlite::Db>> OpenConnection(bool writer);
  Result<ReadLease> AcquireReader();

  // Helpers run inside a transaction on `db` (sqlite_store.cc).
  static Result<RunRecord> LoadRun(sqlite::Db* db, const RunRef& ref);
  static Result<RunRecord> LoadRunByPk(sqlite::Db* db, int64_t pk);
  static Result<WriterRecord> LoadWriter(sqlite::Db* db, int64_t run_pk, const RunRef& ref,
                                         const std::string& label);
  static Result<std::vector<WriterRecord>> LoadWriters(sqlite::Db* db, int64_t run_pk);
  // Recomputes a run's state from its writers (run_state.h) and stores it.
  static Status RecomputeRunState(sqlite::Db* db, int64_t run_pk, int64_t now_ms);
  // The body of Ingest inside a (group's) write transaction: false when the batch is a
  // duplicate and its changes are to be rolled back (sqlite_series.cc).
  static Result<bool> IngestInTxn(sqlite::Db* db, const RunRef& ref, const std::string& label,
                                  const IngestBatch& batch, int64_t now_ms, IngestResult* out);

  SqliteOptions options_;
  std::mutex write_mu_;
  std::unique_ptr<sqlite::Db> writer_;  // guarded by write_mu_
  sqlite::GroupCommit group_{&write_mu_, &writer_,
                             options_.group_commit ? kMaxGroup : 1};  // Ingest, heartbeats
  sqlite::Checkpointer checkpointer_;  // WAL checkpoints off the write path; stops first
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<sqlite::Db>> idle_readers_;  // guarded by pool_mu_
};

}  // namespace cohort::store
