// SqlStore: saved views, API keys (with the bootstrap key) and run files.
#include <algorithm>

#include "core/clock.h"
#include "core/limits.h"
#include "store/record_checks.h"
#include "store/sql/sql_rows.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

ViewRecord ReadView(const Row& row) { return ReadViewRow(row); }
ApiKeyRecord ReadKey(const Row& row) { return ReadKeyRow(row); }
RunFile ReadRunFile(const Row& row) { return ReadRunFileRow(row); }

const char* RoleName(KeyRole role) { return role == KeyRole::kAdmin ? "admin" : "member"; }

// pg_advisory_xact_lock key that serialises bootstrapping PostgreSQL servers ("cohort").
constexpr int64_t kBootstrapLockKey = 0x636f686f7274;

}  // namespace

// ---- views ----

Result<ViewRecord> SqlStore::CreateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  static const std::string kSql = std::string(
                                      "INSERT INTO views (entity, project, name, spec, created_ms, "
                                      "updated_ms) VALUES ($1, $2, $3, $4, $5, $5) "
                                      "ON CONFLICT DO NOTHING RETURNING ") +
                                  kViewColumns;
  return RunFor<ViewRecord>(Access::kWrite, [&](Conn& conn) -> Result<ViewRecord> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t held,
        sql::QueryInt(conn, "SELECT count(*) FROM views WHERE entity = $1 AND project = $2",
                      Params().Add(view.entity).Add(view.project)));
    if (held >= limits::kMaxViewsPerProject) {
      return Status::FailedPrecondition(
          "view: project '" + view.entity + "/" + view.project + "' has " + std::to_string(held) +
          " views, the most it may keep (" + std::to_string(limits::kMaxViewsPerProject) +
          "): delete some first");
    }
    return sql::QueryOne<ViewRecord>(
        conn, kSql,
        Params().Add(view.entity).Add(view.project).Add(view.name).Add(view.spec_json).Add(now),
        ReadView, ViewNameTaken(view));
  });
}

Result<std::vector<ViewRecord>> SqlStore::ListViews(const std::string& entity,
                                                    const std::string& project) {
  static const std::string kSql = std::string("SELECT ") + kViewColumns +
                                  " FROM views WHERE entity = $1 AND project = $2 "
                                  "ORDER BY name, pk";
  using Out = std::vector<ViewRecord>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<ViewRecord>(conn, kSql, Params().Add(entity).Add(project), ReadView);
  });
}

Result<ViewRecord> SqlStore::UpdateView(const ViewRecord& view) {
  COHORT_RETURN_IF_ERROR(ValidateView(view));
  const int64_t now = NowMillis();
  // updated_ms grows with every update (by 1 at least), so that it names the version an edit
  // was based on: view.updated_ms > 0 updates only that version.
  static const std::string kSql =
      std::string(
          "UPDATE views SET name = $1, spec = $2, updated_ms = greatest(updated_ms + 1, $3) "
          "WHERE pk = $4 AND entity = $5 AND project = $6 AND ($7 = 0 OR updated_ms = $7) "
          "RETURNING ") +
      kViewColumns;
  return RunFor<ViewRecord>(Access::kWrite, [&](Conn& conn) -> Result<ViewRecord> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t clash,
        sql::QueryInt(conn,
                      "SELECT 1 FROM views WHERE entity = $1 AND "
                      "project = $2 AND name = $3 AND pk <> $4",
                      Params().Add(view.entity).Add(view.project).Add(view.name).Add(view.id)));
    if (clash != 0) return ViewNameTaken(view);
    Result<ViewRecord> updated =
        sql::QueryOne<ViewRecord>(conn, kSql,
                                  Params()
                                      .Add(view.name)
                                      .Add(view.spec_json)
                                      .Add(now)
                                      .Add(view.id)
                                      .Add(view.entity)
                                      .Add(view.project)
                                      .Add(std::max<int64_t>(view.updated_ms, 0)),
                                  ReadView, ViewNotFound(view.entity, view.project, view.id));
    // A rename racing another server's create of the same name.
    if (!updated.ok() && updated.status().code() == StatusCode::kAlreadyExists) {
      return ViewNameTaken(view);
    }
    if (!updated.ok() && updated.status().code() == StatusCode::kNotFound && view.updated_ms > 0) {
      COHORT_ASSIGN_OR_RETURN(
          int64_t now_at,
          sql::QueryInt(conn,
                        "SELECT updated_ms FROM views WHERE pk = $1 AND entity = $2 AND "
                        "project = $3",
                        Params().Add(view.id).Add(view.entity).Add(view.project)));
      if (now_at != 0) {
        return Status::FailedPrecondition(
            "view #" + std::to_string(view.id) + ": changed by another edit since the version " +
            "this one was based on (updated_ms " + std::to_string(view.updated_ms) + ", now " +
            std::to_string(now_at) + "); nothing saved: load the view again and redo the " +
            "change, or save it as a new view");
      }
    }
    return updated;
  });
}

Status SqlStore::DeleteView(const std::string& entity, const std::string& project, int64_t id) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t deleted,
        conn.Exec("DELETE FROM views WHERE pk = $1 AND entity = $2 AND project = $3",
                  Params().Add(id).Add(entity).Add(project)));
    if (deleted == 0) return ViewNotFound(entity, project, id);
    return Status::Ok();
  });
}

// ---- API keys ----

Result<ApiKeyRecord> SqlStore::CreateApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  return RunFor<ApiKeyRecord>(Access::kWrite, [&](Conn& conn) -> Result<ApiKeyRecord> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t id,
        sql::QueryOne<int64_t>(
            conn,
            "INSERT INTO api_keys (entity, name, role, hash, prefix, created_ms, revoked) "
            "VALUES ($1, $2, $3, $4, $5, $6, false) ON CONFLICT DO NOTHING RETURNING pk",
            Params()
                .Add(key.entity)
                .Add(key.name)
                .Add(RoleName(key.role))
                .Add(key.hash)
                .Add(key.prefix)
                .Add(now),
            [](const Row& row) { return row.Int(0); }, ApiKeyHashTaken()));
    ApiKeyRecord out = key;
    out.id = id;
    out.created_ms = now;
    out.revoked = false;
    return out;
  });
}

Result<ApiKeyRecord> SqlStore::FindApiKey(const std::string& hash) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE hash = $1 AND NOT revoked";
  return RunFor<ApiKeyRecord>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<ApiKeyRecord>(conn, kSql, Params().Add(hash), ReadKey,
                                       Status::NotFound("api key not found or revoked"));
  });
}

Result<std::vector<ApiKeyRecord>> SqlStore::ListApiKeys(const std::string& entity) {
  static const std::string kSql =
      std::string("SELECT ") + kKeyColumns + " FROM api_keys WHERE entity = $1 ORDER BY pk";
  using Out = std::vector<ApiKeyRecord>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<ApiKeyRecord>(conn, kSql, Params().Add(entity), ReadKey);
  });
}

Status SqlStore::RevokeApiKey(const std::string& entity, int64_t id) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(int64_t changed,
                            conn.Exec("UPDATE api_keys SET revoked = true WHERE pk = $1 AND "
                                      "entity = $2",
                                      Params().Add(id).Add(entity)));
    if (changed == 0) return ApiKeyNotFound(entity, id);
    return Status::Ok();
  });
}

Result<int64_t> SqlStore::CountApiKeys(bool with_revoked) {
  return RunFor<int64_t>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryInt(conn, with_revoked ? "SELECT count(*) FROM api_keys"
                                            : "SELECT count(*) FROM api_keys WHERE NOT revoked");
  });
}

Result<std::optional<ApiKeyRecord>> SqlStore::CreateFirstApiKey(const ApiKeyRecord& key) {
  COHORT_RETURN_IF_ERROR(ValidateApiKey(key));
  const int64_t now = key.created_ms > 0 ? key.created_ms : NowMillis();
  using Out = std::optional<ApiKeyRecord>;
  return RunFor<Out>(Access::kWrite, [&](Conn& conn) -> Result<Out> {
    // Servers bootstrapping one database serialise here. SQLite's write transaction excludes
    // every other writer already; PostgreSQL's lock is held to the end of the transaction, and
    // the insert is a later statement, so under READ COMMITTED its snapshot includes a key that
    // another server committed before releasing the lock.
    if (engine() == sql::Engine::kPostgres) {
      COHORT_RETURN_IF_ERROR(
          conn.Exec("SELECT pg_advisory_xact_lock($1)", Params().Add(kBootstrapLockKey)).status());
    }
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<sql::Rows> rows,
        conn.Query("INSERT INTO api_keys (entity, name, role, hash, prefix, created_ms, revoked) "
                   "SELECT $1, $2, $3, $4, $5, $6, false WHERE NOT EXISTS (SELECT 1 FROM "
                   "api_keys WHERE NOT revoked) ON CONFLICT DO NOTHING RETURNING pk",
                   Params()
                       .Add(key.entity)
                       .Add(key.name)
                       .Add(RoleName(key.role))
                       .Add(key.hash)
                       .Add(key.prefix)
                       .Add(now)));
    COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
    if (!row) return Out();
    ApiKeyRecord out = key;
    out.id = rows->Int(0);
    out.created_ms = now;
    out.revoked = false;
    return Out(std::move(out));
  });
}

// ---- run files ----

Result<RunFile> SqlStore::PutRunFile(const RunRef& ref, const RunFile& file) {
  COHORT_RETURN_IF_ERROR(ValidateFileName(file.name));
  if (!file.sha256.empty() && (!file.data.empty() || file.size < 0)) {
    return Status::InvalidArgument("run file '" + file.name +
                                   "': a file kept as a blob has no data of its own");
  }
  const RunFile stored = StoredRunFile(file, file.updated_ms > 0 ? file.updated_ms : NowMillis());
  const int64_t now = stored.updated_ms;
  return RunFor<RunFile>(Access::kWrite, [&](Conn& conn) -> Result<RunFile> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO run_files (run_pk, name, content_type, size, updated_ms, data, "
                  "sha256) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_pk, name) DO "
                  "UPDATE SET content_type = excluded.content_type, size = excluded.size, "
                  "updated_ms = excluded.updated_ms, data = excluded.data, "
                  "sha256 = excluded.sha256",
                  Params()
                      .Add(run.pk)
                      .Add(file.name)
                      .Add(file.content_type)
                      .Add(stored.size)
                      .Add(now)
                      .AddBlob(file.data)
                      .Add(file.sha256))
            .status());
    COHORT_RETURN_IF_ERROR(
        conn.Exec("UPDATE runs SET updated_ms = greatest(updated_ms, $1) WHERE pk = $2",
                  Params().Add(now).Add(run.pk))
            .status());
    return stored;
  });
}

Result<std::vector<RunFile>> SqlStore::ListRunFiles(const RunRef& ref) {
  static const std::string kSql =
      std::string("SELECT ") + kRunFileColumns + " FROM run_files WHERE run_pk = $1 ORDER BY name";
  using Out = std::vector<RunFile>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryAll<RunFile>(conn, kSql, Params().Add(run.pk), ReadRunFile);
  });
}

Result<RunFile> SqlStore::GetRunFile(const RunRef& ref, const std::string& name) {
  static const std::string kSql = std::string("SELECT ") + kRunFileColumns +
                                  ", data FROM run_files WHERE run_pk = $1 AND name = $2";
  return RunFor<RunFile>(Access::kRead, [&](Conn& conn) -> Result<RunFile> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryOne<RunFile>(
        conn, kSql, Params().Add(run.pk).Add(name),
        [](const Row& row) {
          RunFile f = ReadRunFileRow(row);
          f.data = std::string(row.Bytes(5));
          return f;
        },
        RunFileNotFound(ref, name));
  });
}

}  // namespace cohort::store
