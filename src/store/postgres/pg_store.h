// PostgresStore: the scale-out Store backend. Several `cohort server` processes may share one
// database; every call is one transaction, so they see and keep the same semantics as one
// SqliteStore (the conformance suite in store_conformance.h holds both to them).
//
// Concurrency across servers: writes run in READ COMMITTED transactions that lock what they
// read-modify-write, always in the order writer row -> series rows -> run row, so that two
// servers ingesting for one run serialise per writer and never deadlock each other. A batch is
// stored at most once per (writer, seq): INSERT ... ON CONFLICT DO NOTHING on the batches table
// under the writer's row lock. Calls that hit a deadlock or serialization failure anyway (e.g.
// DeleteRun racing an ingest) are retried (pg_pool.h). Multi-statement reads run in one
// REPEATABLE READ READ ONLY transaction, so they see one snapshot.
//
// Threading: every method is thread-safe. Calls borrow a connection from a bounded pool
// (PostgresOptions::pool_size) for their duration; reads may go to read replicas
// (PostgresOptions::read_conninfo).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_group_commit.h"
#include "store/postgres/pg_ingest_cache.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_pool.h"
#include "store/store.h"

namespace cohort::store {

class PostgresStore final : public Store {
 public:
  // Connects, applies schema migrations and keeps the connection for the pool.
  static Result<std::unique_ptr<PostgresStore>> Open(const pg::PostgresOptions& options);
  // As Open, from a postgresql:// URL (pg_options.h).
  static Result<std::unique_ptr<PostgresStore>> OpenUrl(const std::string& url);
  ~PostgresStore() override;

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
  Result<WriterRecord> FinishWriter(const RunRef& ref, const std::string& label, RunState state,
                                    std::optional<int> exit_code, int64_t now_ms) override;
  Result<int64_t> MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) override;

  Result<IngestResult> Ingest(const RunRef& ref, const std::string& label, const IngestBatch& batch,
                              int64_t now_ms) override;
  Result<std::vector<SeriesInfo>> ListSeries(const RunRef& ref) override;
  Result<std::vector<SeriesData>> QueryHistory(const HistoryQuery& query) override;
  Result<std::vector<ConsoleLine>> QueryConsole(const ConsoleQuery& query) override;
  Result<ConsoleIndex> IndexConsole(const ConsoleQuery& query, int64_t stride) override;

  // pg_compat.cc
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

  // pg_sessions.cc
  Status CreateSession(const SessionRecord& s) override;
  Result<ApiKeyRecord> RedeemLoginToken(const std::string& token_hash, const SessionRecord& session,
                                        int64_t now_ms) override;
  Result<ApiKeyRecord> FindSession(const std::string& hash, int64_t now_ms) override;
  Status DeleteSession(const std::string& hash) override;
  Result<int64_t> PruneSessions(int64_t now_ms) override;

  // pg_dump.cc
  Status Export(const std::function<Status(const DumpRecord&)>& sink) override;
  Result<int64_t> Import(const std::vector<DumpRecord>& records, const DumpHeader& from) override;
  Status FinishImport() override;
  Result<DumpCounts> CountRows() override;

  // Batches stored through the one-round-trip path of Ingest (pg_ingest.cc), for tests.
  int64_t fast_ingests() const { return fast_ingests_.load(std::memory_order_relaxed); }
  // Tries of that path that found the writer's rows changed since this server planned the batch
  // (another server wrote for the writer); each was planned again or took the reading path.
  int64_t stale_ingests() const { return stale_ingests_.load(std::memory_order_relaxed); }
  // The group commit of those batches (PostgresOptions::group_commit); null when off.
  pg::GroupCommit* group_commit() { return group_commit_.get(); }

  // The pools (for tests and metrics).
  pg::Pool* primary_pool() { return primary_.get(); }
  pg::Pool* read_pool() { return reads_ ? reads_.get() : primary_.get(); }

 private:
  explicit PostgresStore(const pg::PostgresOptions& options);

  // Runs fn in a transaction on the primary / on the read pool (pg_pool.h RunTransaction).
  template <typename Fn>
  auto Write(Fn&& fn) {
    return pg::RunTransaction(primary_.get(), pg::TxnMode::kWrite, std::forward<Fn>(fn));
  }
  template <typename Fn>
  auto Read(pg::TxnMode mode, Fn&& fn) {
    return pg::RunTransaction(primary_.get(), mode, std::forward<Fn>(fn));
  }
  template <typename Fn>
  auto ReadReplica(pg::TxnMode mode, Fn&& fn) {
    return pg::RunTransaction(read_pool(), mode, std::forward<Fn>(fn));
  }

  // Helpers run on a connection inside the caller's transaction (pg_store.cc). `lock` takes the
  // row lock (FOR UPDATE).
  static Result<RunRecord> LoadRun(pg::Conn* c, const RunRef& ref, bool lock = false);
  static Result<RunRecord> LoadRunByPk(pg::Conn* c, int64_t pk);
  static Result<WriterRecord> LoadWriter(pg::Conn* c, int64_t run_pk, const RunRef& ref,
                                         const std::string& label);
  static Result<std::vector<WriterRecord>> LoadWriters(pg::Conn* c, int64_t run_pk);
  // Locks the run row, then recomputes its state from its writers (run_state.h) and stores it.
  // Callers have locked (changed) the writer rows first.
  static Status RecomputeRunState(pg::Conn* c, int64_t run_pk, int64_t now_ms);

  std::unique_ptr<pg::Pool> primary_;
  std::unique_ptr<pg::Pool> reads_;  // null: reads use primary_
  pg::IngestCache ingest_cache_;     // pg_ingest.cc
  const bool ingest_cache_enabled_;  // PostgresOptions::ingest_cache
  std::atomic<int64_t> fast_ingests_{0};
  std::atomic<int64_t> stale_ingests_{0};
  std::unique_ptr<pg::GroupCommit> group_commit_;  // null: off; uses primary_
};

}  // namespace cohort::store
