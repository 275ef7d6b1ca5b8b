// PostgresStore: the bootstrap key and batch retention (store.h, "retention").
#include "core/clock.h"
#include "store/record_checks.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

// pg_advisory_xact_lock key that serialises bootstrapping servers ("cohort" in ASCII).
constexpr int64_t kBootstrapLockKey = 0x636f686f7274;

}  // namespace

Result<std::optional<ApiKeyRecord>> PostgresStore::CreateFirstApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  return Write([&](Conn* c) -> Result<std::optional<ApiKeyRecord>> {
    // The lock is held to the end of the transaction. The insert is a later statement, so under
    // READ COMMITTED its snapshot includes a key that another server committed before releasing
    // the lock.
    Params lock;
    lock.Add(kBootstrapLockKey);
    COHORT_RETURN_IF_ERROR(c->Exec("SELECT pg_advisory_xact_lock($1)", lock).status());
    Params p;
    p.Add(key.entity).Add(key.name).Add(key.role == KeyRole::kAdmin ? "admin" : "member");
    p.Add(key.hash).Add(key.prefix).Add(now);
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("INSERT INTO api_keys (entity, name, role, hash, prefix, created_ms, revoked) "
                "SELECT $1, $2, $3, $4, $5, $6, false WHERE NOT EXISTS (SELECT 1 FROM api_keys "
                "WHERE NOT revoked) ON CONFLICT DO NOTHING RETURNING pk",
                p));
    if (res.rows() == 0) return std::optional<ApiKeyRecord>();
    ApiKeyRecord out = key;
    out.id = res.Int(0, 0);
    out.created_ms = now;
    out.revoked = false;
    return std::optional<ApiKeyRecord>(std::move(out));
  });
}

Result<int64_t> PostgresStore::PruneBatches(int64_t stored_before_ms) {
  return Write([&](Conn* c) -> Result<int64_t> {
    Params p;
    p.Add(stored_before_ms);
    // One statement: the writers' watermarks rise with the deletion. Updating a writer row takes
    // its lock, which Ingest takes too: a batch racing with the pruning sees either its record
    // or the raised watermark.
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("WITH d AS (DELETE FROM batches WHERE stored_ms < $1 RETURNING writer_pk, seq), "
                "m AS (SELECT writer_pk, max(seq) AS seq FROM d GROUP BY writer_pk), "
                "u AS (UPDATE writers w SET pruned_seq = greatest(w.pruned_seq, m.seq) FROM m "
                "WHERE w.pk = m.writer_pk) SELECT count(*) FROM d",
                p));
    return res.Int(0, 0);
  });
}

}  // namespace cohort::store
