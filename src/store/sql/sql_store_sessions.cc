// SqlStore: browser sessions and one-time login tokens (the `sessions` table, sql_schema.cc), by
// the hash of their secret, acting for an API key until they expire or the key is revoked.
#include "store/record_checks.h"
#include "store/sql/sql_rows.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

ApiKeyRecord ReadKey(const Row& row) { return ReadKeyRow(row); }

// Inserts `s` for the key `key_id` when that key exists and is not revoked; false when it does
// not.
Result<bool> InsertSession(Conn& conn, const SessionRecord& s, int64_t key_id) {
  COHORT_ASSIGN_OR_RETURN(
      int64_t stored,
      conn.Exec("INSERT INTO sessions (hash, kind, key_pk, created_ms, expires_ms) "
                "SELECT $1, $2, pk, $3, $4 FROM api_keys WHERE pk = $5 AND NOT revoked",
                Params()
                    .Add(s.hash)
                    .Add(SessionKindName(s.kind))
                    .Add(s.created_ms)
                    .Add(s.expires_ms)
                    .Add(key_id)));
  return stored > 0;
}

}  // namespace

Result<bool> SqlStore::Exists(Access access, const std::string& query, const Params& params) {
  return RunFor<bool>(access, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<int64_t> rows,
        sql::QueryAll<int64_t>(conn, query, params, [](const Row& row) { return row.Int(0); }));
    return !rows.empty();
  });
}

Status SqlStore::CreateSession(const SessionRecord& s) {
  COHORT_RETURN_IF_ERROR(ValidateSession(s));
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(conn, s, s.key_id));
    if (!stored) return SessionKeyGone(s.key_id);
    return Status::Ok();
  });
}

Result<ApiKeyRecord> SqlStore::RedeemLoginToken(const std::string& token_hash,
                                                const SessionRecord& session, int64_t now_ms) {
  COHORT_RETURN_IF_ERROR(ValidateSession(session));
  static const std::string kLiveKey =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE pk = $1 AND NOT revoked";
  // A token that is not there is refused by a read: anyone may post tokens, and each write
  // transaction waits for (and holds up) the store's writers, ingest included.
  COHORT_ASSIGN_OR_RETURN(bool known, Exists(Access::kReadOne,
                                             "SELECT 1 FROM sessions WHERE hash = $1 AND "
                                             "kind = 'login' AND expires_ms > $2",
                                             Params().Add(token_hash).Add(now_ms)));
  if (!known) return LoginTokenInvalid();
  return RunFor<ApiKeyRecord>(Access::kWrite, [&](Conn& conn) -> Result<ApiKeyRecord> {
    // The token goes first: a concurrent redemption of it waits for this row (PostgreSQL's row
    // lock; SQLite's one writer) and then finds it gone.
    COHORT_ASSIGN_OR_RETURN(
        int64_t key_id,
        sql::QueryOne<int64_t>(conn,
                               "DELETE FROM sessions WHERE hash = $1 AND kind = 'login' AND "
                               "expires_ms > $2 RETURNING key_pk",
                               Params().Add(token_hash).Add(now_ms),
                               [](const Row& row) { return row.Int(0); }, LoginTokenInvalid()));
    COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(conn, session, key_id));
    if (!stored) return LoginTokenInvalid();  // its key was revoked; nothing is kept
    return sql::QueryOne<ApiKeyRecord>(conn, kLiveKey, Params().Add(key_id), ReadKey,
                                       SessionKeyGone(key_id));
  });
}

Result<ApiKeyRecord> SqlStore::FindSession(const std::string& hash, int64_t now_ms) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns +
      " FROM api_keys WHERE NOT revoked AND pk = (SELECT key_pk FROM sessions WHERE hash = $1 "
      "AND kind = 'session' AND expires_ms > $2)";
  return RunFor<ApiKeyRecord>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<ApiKeyRecord>(conn, kSql, Params().Add(hash).Add(now_ms), ReadKey,
                                       SessionNotFound());
  });
}

Status SqlStore::DeleteSession(const std::string& hash) {
  // As RedeemLoginToken: an unknown session costs a read, never a write transaction.
  COHORT_ASSIGN_OR_RETURN(
      bool known,
      Exists(Access::kReadOne, "SELECT 1 FROM sessions WHERE hash = $1", Params().Add(hash)));
  if (!known) return SessionNotFound();
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(int64_t deleted, conn.Exec("DELETE FROM sessions WHERE hash = $1",
                                                       Params().Add(hash)));
    if (deleted == 0) return SessionNotFound();
    return Status::Ok();
  });
}

Result<int64_t> SqlStore::PruneSessions(int64_t now_ms) {
  return RunFor<int64_t>(Access::kWrite, [&](Conn& conn) {
    return conn.Exec(
        "DELETE FROM sessions WHERE expires_ms <= $1 OR key_pk IN "
        "(SELECT pk FROM api_keys WHERE revoked)",
        Params().Add(now_ms));
  });
}

}  // namespace cohort::store
