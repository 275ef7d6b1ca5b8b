// SqliteStore: browser sessions and one-time login tokens (the `sessions` table; mirrored
// statement for statement by postgres/pg_sessions.cc).
#include "store/record_checks.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

// Inserts `s` for its key when that key exists and is not revoked; false when it does not.
Result<bool> InsertSession(Db* db, const SessionRecord& s, int64_t key_id) {
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("INSERT INTO sessions (hash, kind, key_pk, created_ms, expires_ms) "
                          "SELECT ?, ?, pk, ?, ? FROM api_keys WHERE pk = ? AND revoked = 0"));
  st.Bind(s.hash).Bind(SessionKindName(s.kind)).Bind(s.created_ms).Bind(s.expires_ms);
  st.Bind(key_id);
  COHORT_RETURN_IF_ERROR(st.Run());
  return db->Changes() > 0;
}

Result<ApiKeyRecord> LoadLiveKey(Db* db, int64_t key_id) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE pk = ? AND revoked = 0";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(key_id);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return SessionKeyGone(key_id);
  return ReadKeyRow(st);
}

}  // namespace

Status SqliteStore::CreateSession(const SessionRecord& s) {
  COHORT_RETURN_IF_ERROR(ValidateSession(s));
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(db, s, s.key_id));
  if (!stored) return SessionKeyGone(s.key_id);
  return txn.Commit();
}

Result<ApiKeyRecord> SqliteStore::RedeemLoginToken(const std::string& token_hash,
                                                   const SessionRecord& session, int64_t now_ms) {
  COHORT_RETURN_IF_ERROR(ValidateSession(session));
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  int64_t key_id = 0;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("DELETE FROM sessions WHERE hash = ? AND kind = 'login' AND "
                                       "expires_ms > ? RETURNING key_pk"));
    st.Bind(token_hash).Bind(now_ms);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return LoginTokenInvalid();
    key_id = st.Int(0);
  }
  COHORT_ASSIGN_OR_RETURN(bool stored, InsertSession(db, session, key_id));
  if (!stored) return LoginTokenInvalid();  // its key was revoked
  COHORT_ASSIGN_OR_RETURN(ApiKeyRecord key, LoadLiveKey(db, key_id));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return key;
}

Result<ApiKeyRecord> SqliteStore::FindSession(const std::string& hash, int64_t now_ms) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns +
      " FROM api_keys WHERE revoked = 0 AND pk = (SELECT key_pk FROM sessions WHERE hash = ? "
      "AND kind = 'session' AND expires_ms > ?)";
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(hash).Bind(now_ms);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return SessionNotFound();
  return ReadKeyRow(st);
}

Status SqliteStore::DeleteSession(const std::string& hash) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("DELETE FROM sessions WHERE hash = ?"));
    st.Bind(hash);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) return SessionNotFound();
  }
  return txn.Commit();
}

Result<int64_t> SqliteStore::PruneSessions(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(Stmt st,
                          db->Cached("DELETE FROM sessions WHERE expires_ms <= ? OR key_pk IN "
                                     "(SELECT pk FROM api_keys WHERE revoked = 1)"));
  st.Bind(now_ms);
  COHORT_RETURN_IF_ERROR(st.Run());
  const int64_t pruned = db->Changes();
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return pruned;
}

}  // namespace cohort::store
