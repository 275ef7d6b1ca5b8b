// PostgresStore: browser sessions and one-time login tokens (the `sessions` table; mirrored
// statement for statement by sqlite/sqlite_sessions.cc).
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"
#include "store/record_checks.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

// Inserts `s` for its key when that key exists and is not revoked; false when it does not.
Result<bool> InsertSession(Conn* c, const SessionRecord& s, int64_t key_id) {
  Params p;
  p.Add(s.hash).Add(SessionKindName(s.kind)).Add(s.created_ms).Add(s.expires_ms).Add(key_id);
  COHORT_ASSIGN_OR_RETURN(
      PgResult res, c->Exec("INSERT INTO sessions (hash, kind, key_pk, created_ms, expires_ms) "
                            "SELECT $1, $2, pk, $3, $4 FROM api_keys WHERE pk = $5 AND NOT revoked",
                            p));
  return res.affected() > 0;
}

Result<ApiKeyRecord> LoadLiveKey(Conn* c, int64_t key_id) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE pk = $1 AND NOT revoked";
  Params p;
  p.Add(key_id);
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
  if (res.rows() == 0) return SessionKeyGone(key_id);
  return ReadKeyRow(pg::PgRow(res, 0));
}

}  // namespace

Status PostgresStore::CreateSession(const SessionRecord& s) {
  COHORT_RETURN_IF_ERROR(ValidateSession(s));
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(c, s, s.key_id));
    if (!stored) return SessionKeyGone(s.key_id);
    return Status::Ok();
  });
}

Result<ApiKeyRecord> PostgresStore::RedeemLoginToken(const std::string& token_hash,
                                                     const SessionRecord& session, int64_t now_ms) {
  COHORT_RETURN_IF_ERROR(ValidateSession(session));
  Params p;
  p.Add(token_hash).Add(now_ms);
  return Write([&](Conn* c) -> Result<ApiKeyRecord> {
    // The row lock of the DELETE makes a concurrent redemption of the same token wait, then
    // find it gone.
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("DELETE FROM sessions WHERE hash = $1 AND kind = 'login' AND "
                                    "expires_ms > $2 RETURNING key_pk",
                                    p));
    if (res.rows() == 0) return LoginTokenInvalid();
    const int64_t key_id = res.Int(0, 0);
    COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(c, session, key_id));
    if (!stored) return LoginTokenInvalid();  // its key was revoked; the transaction rolls back
    return LoadLiveKey(c, key_id);
  });
}

Result<ApiKeyRecord> PostgresStore::FindSession(const std::string& hash, int64_t now_ms) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns +
      " FROM api_keys WHERE NOT revoked AND pk = (SELECT key_pk FROM sessions WHERE hash = $1 "
      "AND kind = 'session' AND expires_ms > $2)";
  Params p;
  p.Add(hash).Add(now_ms);
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<ApiKeyRecord> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    if (res.rows() == 0) return SessionNotFound();
    return ReadKeyRow(pg::PgRow(res, 0));
  });
}

Status PostgresStore::DeleteSession(const std::string& hash) {
  Params p;
  p.Add(hash);
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec("DELETE FROM sessions WHERE hash = $1", p));
    if (res.affected() == 0) return SessionNotFound();
    return Status::Ok();
  });
}

Result<int64_t> PostgresStore::PruneSessions(int64_t now_ms) {
  Params p;
  p.Add(now_ms);
  return Write([&](Conn* c) -> Result<int64_t> {
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("DELETE FROM sessions WHERE expires_ms <= $1 OR key_pk IN "
                                    "(SELECT pk FROM api_keys WHERE revoked)",
                                    p));
    return res.affected();
  });
}

}  // namespace cohort::store
