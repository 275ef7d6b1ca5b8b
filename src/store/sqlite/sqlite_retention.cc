// SqliteStore: the bootstrap key and batch retention (store.h, "retention").
#include "core/clock.h"
#include "store/record_checks.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

Result<std::optional<ApiKeyRecord>> SqliteStore::CreateFirstApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  // The write transaction (BEGIN IMMEDIATE) excludes every other writer, in this process and in
  // others sharing the file, between the count and the insert.
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(int64_t live,
                          db->QueryInt("SELECT count(*) FROM api_keys WHERE revoked = 0"));
  if (live > 0) return std::optional<ApiKeyRecord>();
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO api_keys (entity, name, role, hash, "
                                              "prefix, created_ms, revoked) "
                                              "VALUES (?, ?, ?, ?, ?, ?, 0)"));
  st.Bind(key.entity).Bind(key.name).Bind(key.role == KeyRole::kAdmin ? "admin" : "member");
  st.Bind(key.hash).Bind(key.prefix).Bind(now);
  COHORT_RETURN_IF_ERROR(st.Run());
  ApiKeyRecord out = key;
  out.id = db->LastInsertRowid();
  out.created_ms = now;
  out.revoked = false;
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return std::optional<ApiKeyRecord>(std::move(out));
}

Result<int64_t> SqliteStore::PruneBatches(int64_t stored_before_ms) {
  // In slices of kPruneSlice records, one write transaction each, so that ingest waits for one
  // slice at most (a store upgraded with months of records prunes them all at its first sweep).
  constexpr int64_t kPruneSlice = 10000;
  int64_t removed = 0;
  while (true) {
    std::lock_guard<std::mutex> lock(write_mu_);
    Db* db = writer_.get();
    COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
    COHORT_RETURN_IF_ERROR(
        db->Exec("CREATE TEMP TABLE IF NOT EXISTS prune_slice (writer_pk INTEGER, seq INTEGER); "
                 "DELETE FROM temp.prune_slice"));
    {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st, db->Cached("INSERT INTO temp.prune_slice SELECT writer_pk, seq FROM batches "
                              "WHERE stored_ms < ? ORDER BY stored_ms LIMIT ?"));
      st.Bind(stored_before_ms).Bind(kPruneSlice);
      COHORT_RETURN_IF_ERROR(st.Run());
    }
    const int64_t slice = db->Changes();
    if (slice == 0) break;  // the Txn rolls back the no-op
    COHORT_RETURN_IF_ERROR(
        db->Exec("UPDATE writers SET pruned_seq = max(pruned_seq, (SELECT max(seq) FROM "
                 "temp.prune_slice p WHERE p.writer_pk = writers.pk)) WHERE pk IN (SELECT "
                 "writer_pk FROM temp.prune_slice)"));
    COHORT_RETURN_IF_ERROR(
        db->Exec("DELETE FROM batches WHERE (writer_pk, seq) IN (SELECT writer_pk, seq FROM "
                 "temp.prune_slice)"));
    COHORT_RETURN_IF_ERROR(txn.Commit());
    removed += slice;
    if (slice < kPruneSlice) break;
  }
  return removed;
}

}  // namespace cohort::store
