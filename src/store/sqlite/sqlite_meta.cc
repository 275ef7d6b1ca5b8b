// SqliteStore: saved views and API keys.
#include "core/clock.h"
#include "store/record_checks.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

Result<ViewRecord> LoadView(Db* db, int64_t id) {
  static const std::string kSql =
      std::string("SELECT ") + kViewColumns + " FROM views WHERE pk = ?";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(id);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Status::NotFound("view " + std::to_string(id) + " not found");
  return ReadViewRow(st);
}

}  // namespace

// ---- views ----

Result<ViewRecord> SqliteStore::CreateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO views (entity, project, name, spec, "
                                                "created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?) "
                                                "ON CONFLICT DO NOTHING"));
    st.Bind(view.entity).Bind(view.project).Bind(view.name).Bind(view.spec_json);
    st.Bind(now).Bind(now);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) return ViewNameTaken(view);
  }
  COHORT_ASSIGN_OR_RETURN(ViewRecord out, LoadView(db, db->LastInsertRowid()));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<std::vector<ViewRecord>> SqliteStore::ListViews(const std::string& entity,
                                                       const std::string& project) {
  static const std::string kSql = std::string("SELECT ") + kViewColumns +
                                  " FROM views WHERE entity = ? AND project = ? ORDER BY name, pk";
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(entity).Bind(project);
  std::vector<ViewRecord> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadViewRow(st));
  }
  return out;
}

Result<ViewRecord> SqliteStore::UpdateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  {
    COHORT_ASSIGN_OR_RETURN(Stmt clash,
                            db->Cached("SELECT 1 FROM views WHERE entity = ? AND project = ? AND "
                                       "name = ? AND pk != ?"));
    clash.Bind(view.entity).Bind(view.project).Bind(view.name).Bind(view.id);
    COHORT_ASSIGN_OR_RETURN(bool taken, clash.Step());
    if (taken) return ViewNameTaken(view);
  }
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE views SET name = ?, spec = ?, updated_ms = max(updated_ms, ?) "
                            "WHERE pk = ? AND entity = ? AND project = ?"));
    st.Bind(view.name).Bind(view.spec_json).Bind(now).Bind(view.id).Bind(view.entity);
    st.Bind(view.project);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) {
      return ViewNotFound(view.entity, view.project, view.id);
    }
  }
  COHORT_ASSIGN_OR_RETURN(ViewRecord out, LoadView(db, view.id));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Status SqliteStore::DeleteView(const std::string& entity, const std::string& project, int64_t id) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("DELETE FROM views WHERE pk = ? AND entity = ? AND project = ?"));
    st.Bind(id).Bind(entity).Bind(project);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) return ViewNotFound(entity, project, id);
  }
  return txn.Commit();
}

// ---- API keys ----

Result<ApiKeyRecord> SqliteStore::CreateApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  ApiKeyRecord out = key;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO api_keys (entity, name, role, hash, "
                                                "prefix, created_ms, revoked) "
                                                "VALUES (?, ?, ?, ?, ?, ?, 0) "
                                                "ON CONFLICT DO NOTHING"));
    st.Bind(key.entity).Bind(key.name).Bind(key.role == KeyRole::kAdmin ? "admin" : "member");
    st.Bind(key.hash).Bind(key.prefix).Bind(now);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) return ApiKeyHashTaken();
  }
  out.id = db->LastInsertRowid();
  out.created_ms = now;
  out.revoked = false;
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<ApiKeyRecord> SqliteStore::FindApiKey(const std::string& hash) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE hash = ? AND revoked = 0";
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(hash);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Status::NotFound("api key not found or revoked");
  return ReadKeyRow(st);
}

Result<std::vector<ApiKeyRecord>> SqliteStore::ListApiKeys(const std::string& entity) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE entity = ? ORDER BY pk";
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(entity);
  std::vector<ApiKeyRecord> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadKeyRow(st));
  }
  return out;
}

Status SqliteStore::RevokeApiKey(const std::string& entity, int64_t id) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE api_keys SET revoked = 1 WHERE pk = ? AND entity = ?"));
    st.Bind(id).Bind(entity);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) {
      return ApiKeyNotFound(entity, id);
    }
  }
  return txn.Commit();
}

Result<int64_t> SqliteStore::CountApiKeys() {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  return db->QueryInt("SELECT count(*) FROM api_keys WHERE revoked = 0");
}

}  // namespace cohort::store
