// PostgresStore: the scale-out Store backend over the shared SQL store (sql/sql_store.h).
// Several `cohort server` processes may share one database; every call is one transaction, so
// they see and keep the same semantics as one SqliteStore (the conformance suite in
// store_conformance.h holds both to them). Its own parts: the connection pools and transaction
// runner (pg_pool.h), the series write path (pipelined, with the ingest cache and group commit:
// pg_ingest.cc), the history query (pg_history.cc) and console text search (LIKE, pg_trgm).
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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_group_commit.h"
#include "store/postgres/pg_ingest_cache.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_pool.h"
#include "store/sql/sql_schema.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

class PostgresStore final : public SqlStore {
 public:
  // Connects and brings the schema to the latest version (options.create_schema: creates it).
  static Result<std::unique_ptr<PostgresStore>> Open(const pg::PostgresOptions& options);
  // As Open, from a postgresql:// URL (pg_options.h).
  static Result<std::unique_ptr<PostgresStore>> OpenUrl(const std::string& url);
  ~PostgresStore() override;

  // pg_ingest.cc
  Result<IngestResult> Ingest(const RunRef& ref, const std::string& label, const IngestBatch& batch,
                              int64_t now_ms) override;
  // pg_history.cc
  Result<std::vector<SeriesData>> QueryHistory(const HistoryQuery& query) override;
  // pg_store.cc
  Result<ConsoleIndex> IndexConsole(const ConsoleQuery& query, int64_t stride) override;

  // Batches stored through the one-round-trip path of Ingest (pg_ingest.cc), for tests.
  int64_t fast_ingests() const { return fast_ingests_.load(std::memory_order_relaxed); }
  // Tries of that path that found the writer's rows changed since this server planned the batch
  // (another server wrote for the writer); each was planned again or took the reading path.
  int64_t stale_ingests() const { return stale_ingests_.load(std::memory_order_relaxed); }
  // The group commit of those batches (PostgresOptions::group_commit); null when off.
  pg::GroupCommit* group_commit() { return group_commit_.get(); }
  // VACUUMs of chunks_tail this store ran (see sql::kTailVacuumRows), for tests.
  int64_t tail_vacuums() const { return tail_vacuums_.load(std::memory_order_relaxed); }

  // The pools (for tests and metrics).
  pg::Pool* primary_pool() { return primary_.get(); }
  pg::Pool* read_pool() { return reads_ ? reads_.get() : primary_.get(); }

 protected:
  Status Run(Access access, const Work& work) override;
  std::string ConsoleTextCondition(const std::string& text, sql::Params* params) const override;
  std::string RunTagCondition(const RunPredicate& p, sql::Params* params) const override;
  std::string RunJsonCondition(const RunPredicate& p, sql::Params* params) const override;
  RunJsonSortExprs JsonSortExprs(RunSortField field, const std::vector<std::string>& path,
                                 sql::Params* params) const override;
  Status AfterImport(sql::Conn& conn) override;
  Result<int64_t> AfterWriterFinished(sql::Conn& conn, int64_t writer_pk) override;
  void TailRowsCommitted(int64_t tail_rows_deleted) override { TailRowsDeleted(tail_rows_deleted); }

 private:
  explicit PostgresStore(const pg::PostgresOptions& options);
  // Counts `rows` tail chunk rows deleted by a committed (or committing) call; wakes the vacuum
  // thread at sql::kTailVacuumRows (sql_schema.h). The store VACUUMs chunks_tail on its own thread
  // (pausing ten times as long as the last one took, at least 100 ms): autovacuum's naptime (a
  // minute by default, a setting of the whole cluster) lets a store ingesting fast leave many
  // more dead rows between its turns, and the table keeps the size they took.
  void TailRowsDeleted(int64_t rows) COHORT_EXCLUDES(vacuum_mu_);
  // The vacuum thread (pg_store.cc): VACUUM chunks_tail when woken, until the store closes.
  void VacuumTails() COHORT_EXCLUDES(vacuum_mu_);

  std::unique_ptr<pg::Pool> primary_;
  std::unique_ptr<pg::Pool> reads_;  // null: reads use primary_
  pg::IngestCache ingest_cache_;     // pg_ingest.cc
  const bool ingest_cache_enabled_;  // PostgresOptions::ingest_cache
  std::atomic<int64_t> fast_ingests_{0};
  std::atomic<int64_t> stale_ingests_{0};
  std::unique_ptr<pg::GroupCommit> group_commit_;  // null: off; uses primary_
  Mutex vacuum_mu_;
  CondVar vacuum_cv_;
  int64_t tails_deleted_ COHORT_GUARDED_BY(vacuum_mu_) = 0;  // since the last VACUUM began
  bool closing_ COHORT_GUARDED_BY(vacuum_mu_) = false;
  std::atomic<int64_t> tail_vacuums_{0};
  std::thread vacuum_thread_;  // last: started when everything above exists
};

}  // namespace cohort::store
