// PostgresStore: saved views and API keys.
#include "core/clock.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"
#include "store/record_checks.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

// ---- views ----

Result<ViewRecord> PostgresStore::CreateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  static const std::string kSql = std::string(
                                      "INSERT INTO views (entity, project, name, spec, created_ms, "
                                      "updated_ms) VALUES ($1, $2, $3, $4, $5, $5) "
                                      "ON CONFLICT DO NOTHING RETURNING ") +
                                  kViewColumns;
  Params p;
  p.Add(view.entity).Add(view.project).Add(view.name).Add(view.spec_json).Add(now);
  return Write([&](Conn* c) -> Result<ViewRecord> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    if (res.rows() == 0) return ViewNameTaken(view);
    return ReadViewRow(pg::PgRow(res, 0));
  });
}

Result<std::vector<ViewRecord>> PostgresStore::ListViews(const std::string& entity,
                                                         const std::string& project) {
  static const std::string kSql = std::string("SELECT ") + kViewColumns +
                                  " FROM views WHERE entity = $1 AND project = $2 "
                                  "ORDER BY name, pk";
  Params p;
  p.Add(entity).Add(project);
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<ViewRecord>> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    std::vector<ViewRecord> out;
    for (int i = 0; i < res.rows(); ++i) out.push_back(ReadViewRow(pg::PgRow(res, i)));
    return out;
  });
}

Result<ViewRecord> PostgresStore::UpdateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  static const std::string kSql = std::string(
                                      "UPDATE views SET name = $1, spec = $2, "
                                      "updated_ms = greatest(updated_ms, $3) "
                                      "WHERE pk = $4 AND entity = $5 AND project = $6 "
                                      "RETURNING ") +
                                  kViewColumns;
  return Write([&](Conn* c) -> Result<ViewRecord> {
    {
      Params p;
      p.Add(view.entity).Add(view.project).Add(view.name).Add(view.id);
      COHORT_ASSIGN_OR_RETURN(PgResult clash,
                              c->Exec("SELECT 1 FROM views WHERE entity = $1 AND project = $2 "
                                      "AND name = $3 AND pk <> $4",
                                      p));
      if (clash.rows() > 0) return ViewNameTaken(view);
    }
    Params p;
    p.Add(view.name).Add(view.spec_json).Add(now).Add(view.id).Add(view.entity).Add(view.project);
    Result<PgResult> res = c->Exec(kSql, p);
    // A rename racing another server's create of the same name.
    if (!res.ok() && res.status().code() == StatusCode::kAlreadyExists) {
      return ViewNameTaken(view);
    }
    if (!res.ok()) return res.status();
    if (res->rows() == 0) {
      return ViewNotFound(view.entity, view.project, view.id);
    }
    return ReadViewRow(pg::PgRow(*res, 0));
  });
}

Status PostgresStore::DeleteView(const std::string& entity, const std::string& project,
                                 int64_t id) {
  Params p;
  p.Add(id).Add(entity).Add(project);
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("DELETE FROM views WHERE pk = $1 AND entity = $2 AND project = $3", p));
    if (res.affected() == 0) return ViewNotFound(entity, project, id);
    return Status::Ok();
  });
}

// ---- API keys ----

Result<ApiKeyRecord> PostgresStore::CreateApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  Params p;
  p.Add(key.entity).Add(key.name).Add(key.role == KeyRole::kAdmin ? "admin" : "member");
  p.Add(key.hash).Add(key.prefix).Add(now);
  return Write([&](Conn* c) -> Result<ApiKeyRecord> {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("INSERT INTO api_keys (entity, name, role, hash, prefix, created_ms, revoked) "
                "VALUES ($1, $2, $3, $4, $5, $6, false) ON CONFLICT DO NOTHING RETURNING pk",
                p));
    if (res.rows() == 0) return ApiKeyHashTaken();
    ApiKeyRecord out = key;
    out.id = res.Int(0, 0);
    out.created_ms = now;
    out.revoked = false;
    return out;
  });
}

Result<ApiKeyRecord> PostgresStore::FindApiKey(const std::string& hash) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE hash = $1 AND NOT revoked";
  Params p;
  p.Add(hash);
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<ApiKeyRecord> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    if (res.rows() == 0) return Status::NotFound("api key not found or revoked");
    return ReadKeyRow(pg::PgRow(res, 0));
  });
}

Result<std::vector<ApiKeyRecord>> PostgresStore::ListApiKeys(const std::string& entity) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE entity = $1 ORDER BY pk";
  Params p;
  p.Add(entity);
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<ApiKeyRecord>> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    std::vector<ApiKeyRecord> out;
    for (int i = 0; i < res.rows(); ++i) out.push_back(ReadKeyRow(pg::PgRow(res, i)));
    return out;
  });
}

Status PostgresStore::RevokeApiKey(const std::string& entity, int64_t id) {
  Params p;
  p.Add(id).Add(entity);
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("UPDATE api_keys SET revoked = true WHERE pk = $1 AND entity = $2", p));
    if (res.affected() == 0) {
      return ApiKeyNotFound(entity, id);
    }
    return Status::Ok();
  });
}

Result<int64_t> PostgresStore::CountApiKeys() {
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<int64_t> {
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("SELECT count(*) FROM api_keys WHERE NOT revoked"));
    return res.Int(0, 0);
  });
}

}  // namespace cohort::store
