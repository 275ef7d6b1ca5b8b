// PostgresStore: opening, runs and writers. Run listing is in pg_run_list.cc, data in
// pg_series.cc, views and API keys in pg_meta.cc.
#include "store/postgres/pg_store.h"

#include <set>

#include "core/clock.h"
#include "core/ids.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_schema.h"
#include "store/record_json.h"
#include "store/run_state.h"
#include "store/run_summary.h"
#include "store/run_update.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

const std::string kSelectRun = std::string("SELECT ") + pg::kRunColumns +
                               " FROM runs r WHERE r.entity = $1 AND r.project = $2 AND "
                               "r.run_id = $3";
const std::string kSelectRunForUpdate = kSelectRun + " FOR UPDATE";

}  // namespace

// ---- opening ----

PostgresStore::PostgresStore(const pg::PostgresOptions& options)
    : primary_(
          std::make_unique<pg::Pool>(options.conninfo, options.pool_size, options.pool_timeout)),
      ingest_cache_enabled_(options.ingest_cache) {
  if (!options.read_conninfo.empty()) {
    reads_ = std::make_unique<pg::Pool>(options.read_conninfo, options.read_pool_size,
                                        options.pool_timeout);
  }
  if (options.group_commit > 0) {
    group_commit_ = std::make_unique<pg::GroupCommit>(primary_.get(), options.group_commit);
  }
}

PostgresStore::~PostgresStore() = default;

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const pg::PostgresOptions& options) {
  std::unique_ptr<PostgresStore> store(new PostgresStore(options));
  {
    Result<pg::Pool::Lease> lease = store->primary_->Acquire();
    if (!lease.ok()) {
      return Status(lease.status().code(),
                    lease.status().message() + " (" + pg::DescribeConnInfo(options.conninfo) + ")");
    }
    COHORT_RETURN_IF_ERROR(pg::Migrate(lease->get()));
  }
  return store;
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::OpenUrl(const std::string& url) {
  COHORT_ASSIGN_OR_RETURN(pg::PostgresOptions options, pg::ParsePostgresUrl(url));
  return Open(options);
}

// ---- shared helpers ----

Result<RunRecord> PostgresStore::LoadRun(Conn* c, const RunRef& ref, bool lock) {
  Params p;
  p.Add(ref.entity).Add(ref.project).Add(ref.run_id);
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(lock ? kSelectRunForUpdate : kSelectRun, p));
  if (res.rows() == 0) return pg::RunNotFound(ref);
  return pg::ReadRun(res, 0);
}

Result<RunRecord> PostgresStore::LoadRunByPk(Conn* c, int64_t pk) {
  static const std::string kSql =
      std::string("SELECT ") + pg::kRunColumns + " FROM runs r WHERE r.pk = $1 FOR UPDATE";
  Params p;
  p.Add(pk);
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
  if (res.rows() == 0) return Status::NotFound("run #" + std::to_string(pk) + " not found");
  return pg::ReadRun(res, 0);
}

Result<WriterRecord> PostgresStore::LoadWriter(Conn* c, int64_t run_pk, const RunRef& ref,
                                               const std::string& label) {
  static const std::string kSql = std::string("SELECT ") + pg::kWriterColumns +
                                  " FROM writers w WHERE w.run_pk = $1 AND w.label = $2";
  Params p;
  p.Add(run_pk).Add(label);
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
  if (res.rows() == 0) return pg::WriterNotFound(ref, label);
  return pg::ReadWriter(res, 0);
}

Result<std::vector<WriterRecord>> PostgresStore::LoadWriters(Conn* c, int64_t run_pk) {
  static const std::string kSql = std::string("SELECT ") + pg::kWriterColumns +
                                  " FROM writers w WHERE w.run_pk = $1 ORDER BY w.pk";
  Params p;
  p.Add(run_pk);
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
  std::vector<WriterRecord> out;
  out.reserve(size_t(res.rows()));
  for (int i = 0; i < res.rows(); ++i) out.push_back(pg::ReadWriter(res, i));
  return out;
}

Status PostgresStore::RecomputeRunState(Conn* c, int64_t run_pk, int64_t now_ms) {
  // Lock first, then read the writers in a later statement: under READ COMMITTED that statement
  // sees every writer change committed by whoever held the run's lock before us.
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRunByPk(c, run_pk));
  COHORT_ASSIGN_OR_RETURN(std::vector<WriterRecord> writers, LoadWriters(c, run_pk));
  RederiveRunState(writers, &run);
  Params p;
  p.Add(RunStateName(run.state)).Add(run.exit_code).Add(run.finished_ms);
  p.Add(std::max(now_ms, run.updated_ms)).Add(run_pk);
  return c
      ->Exec(
          "UPDATE runs SET state = $1, exit_code = $2, finished_ms = $3, updated_ms = $4 "
          "WHERE pk = $5",
          p)
      .status();
}

namespace {

// The last point of each user series of the run's primary writers (of all writers when none is
// primary): the value at the highest step of the series' newest chunk (chunk indexes only grow,
// so it holds what the writer stored last). One primary-key lookup per series.
constexpr const char* kLastPointsSql =
    "SELECT s.key, c.vlast, c.max_step, c.max_time FROM series s "
    "JOIN writers w ON w.pk = s.writer_pk "
    "CROSS JOIN LATERAL (SELECT c2.vlast, c2.max_step, c2.max_time FROM chunks c2 "
    "WHERE c2.series_pk = s.pk ORDER BY c2.idx DESC LIMIT 1) c "
    "WHERE s.run_pk = $1 AND NOT s.is_system AND (w.is_primary OR NOT EXISTS "
    "(SELECT 1 FROM writers w2 WHERE w2.run_pk = $1 AND w2.is_primary))";

// The last stored point of each user series of the run's primary writers (`keys`: only those;
// null: all). Callers hold the run's row lock.
Result<LastPoints> LoadLastPoints(Conn* c, int64_t run_pk, const std::set<std::string>* keys) {
  Params p;
  p.Add(run_pk);
  static const std::string kByKeys = std::string(kLastPointsSql) + " AND s.key = ANY($2)";
  if (keys) p.AddTextArray(std::vector<std::string>(keys->begin(), keys->end()));
  COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(keys ? kByKeys : kLastPointsSql, p));
  LastPoints out;
  for (int i = 0; i < res.rows(); ++i) {
    out.Add(res.Text(i, 0), LastPoint{res.Double(i, 1), res.Int(i, 2), res.Int(i, 3)});
  }
  return out;
}

// The run's summary following its last stored points (store/run_summary.h).
Status FollowSummary(Conn* c, int64_t run_pk) {
  Params p;
  p.Add(run_pk);
  COHORT_ASSIGN_OR_RETURN(PgResult run,
                          c->Exec("SELECT summary, summary_explicit FROM runs WHERE pk = $1", p));
  if (run.rows() == 0) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(c, run_pk, nullptr));
  std::optional<std::string> next =
      store::FollowLastPoints(run.Text(0, 0), last, ExplicitKeysFromJson(run.Text(0, 1)));
  if (!next) return Status::Ok();
  Params q;
  q.Add(*next).AddJsonb(*next).Add(run_pk);
  return c->Exec("UPDATE runs SET summary = $1, summary_doc = $2 WHERE pk = $3", q).status();
}

}  // namespace

// ---- runs ----

Result<std::pair<RunRecord, bool>> PostgresStore::UpsertRun(const RunUpsert& upsert) {
  COHORT_RETURN_IF_ERROR(ValidateRunRef(upsert.ref, /*allow_empty_id=*/true));
  const std::string tags_json = upsert.tags ? StringsToJson(*upsert.tags) : "[]";
  std::string metadata = "{}";
  if (upsert.metadata_json) {
    COHORT_ASSIGN_OR_RETURN(metadata, MergeJsonObject("{}", *upsert.metadata_json, "metadata"));
  }
  std::string new_config = "{}";
  if (upsert.config_json) {
    COHORT_ASSIGN_OR_RETURN(new_config, MergeJsonObject("{}", *upsert.config_json, "config"));
  }
  const int64_t now = NowMillis();

  // Inserts the run unless (entity, project, run_id) exists; returns its pk or 0.
  auto insert = [&](Conn* c, const RunRef& ref) -> Result<int64_t> {
    Params p;
    p.Add(ref.entity).Add(ref.project).Add(ref.run_id);
    p.Add(upsert.name.value_or("")).Add(upsert.group.value_or(""));
    p.Add(upsert.job_type.value_or("")).Add(upsert.notes.value_or(""));
    p.Add(upsert.host.value_or("")).AddJsonb(tags_json).Add(new_config).AddJsonb(new_config);
    p.Add(metadata).Add(now);
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("INSERT INTO runs (entity, project, run_id, name, grp, job_type, notes, host, "
                "tags, config, config_doc, metadata, created_ms, updated_ms, heartbeat_ms) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13) "
                "ON CONFLICT (entity, project, run_id) DO NOTHING RETURNING pk",
                p));
    return res.rows() == 0 ? int64_t{0} : res.Int(0, 0);
  };

  return Write([&](Conn* c) -> Result<std::pair<RunRecord, bool>> {
    RunRef ref = upsert.ref;
    if (ref.run_id.empty()) {
      for (int attempt = 0; attempt < 16; ++attempt) {
        ref.run_id = ids::RandomBase36(8);
        COHORT_ASSIGN_OR_RETURN(int64_t pk, insert(c, ref));
        if (pk != 0) {
          COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(c, pk));
          return std::make_pair(std::move(out), true);
        }
      }
      return Status::Internal("could not draw an unused run id");
    }
    // Resume (lock and update) or create; a create that loses a race to another server finds
    // the row on the next round and resumes it.
    for (int round = 0; round < 3; ++round) {
      Result<RunRecord> found = LoadRun(c, ref, /*lock=*/true);
      if (!found.ok() && found.status().code() != StatusCode::kNotFound) return found.status();
      if (!found.ok()) {
        COHORT_ASSIGN_OR_RETURN(int64_t pk, insert(c, ref));
        if (pk == 0) continue;
        COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(c, pk));
        return std::make_pair(std::move(out), true);
      }
      RunRecord& r = *found;
      COHORT_RETURN_IF_ERROR(ApplyRunUpsert(upsert, metadata, &r));
      Params p;
      p.Add(r.name).Add(r.group).Add(r.job_type).Add(r.notes).Add(r.host);
      p.AddJsonb(StringsToJson(r.tags)).Add(r.config_json).AddJsonb(r.config_json);
      p.Add(r.metadata_json).Add(now).Add(r.pk);
      COHORT_RETURN_IF_ERROR(
          c->Exec("UPDATE runs SET name = $1, grp = $2, job_type = $3, notes = $4, host = $5, "
                  "tags = $6, config = $7, config_doc = $8, metadata = $9, "
                  "updated_ms = greatest(updated_ms, $10) WHERE pk = $11",
                  p)
              .status());
      COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(c, r.pk));
      return std::make_pair(std::move(out), false);
    }
    return Status::Unavailable("run '" + pg::RunName(ref) +
                               "' is being created and deleted "
                               "concurrently; retry");
  });
}

Result<RunRecord> PostgresStore::GetRun(const RunRef& ref) {
  return Read(pg::TxnMode::kAutocommit, [&](Conn* c) { return LoadRun(c, ref); });
}

Result<RunRecord> PostgresStore::PatchRun(const RunRef& ref, const RunPatch& patch) {
  const int64_t now = NowMillis();
  return Write([&](Conn* c) -> Result<RunRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(c, ref, /*lock=*/true));
    // A summary key set to its series' last stored point keeps following it; any other value
    // makes it explicit (store/run_summary.h).
    std::optional<std::string> explicit_json;
    if (patch.summary_json) {
      COHORT_ASSIGN_OR_RETURN(std::set<std::string> keys, SummaryPatchKeys(*patch.summary_json));
      COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(c, r.pk, &keys));
      Params q;
      q.Add(r.pk);
      COHORT_ASSIGN_OR_RETURN(PgResult cur,
                              c->Exec("SELECT summary_explicit FROM runs WHERE pk = $1", q));
      std::set<std::string> explicit_keys =
          ExplicitKeysFromJson(cur.rows() ? cur.Text(0, 0) : "[]");
      COHORT_RETURN_IF_ERROR(ClassifySummaryPatch(*patch.summary_json, last, &explicit_keys));
      explicit_json = ExplicitKeysToJson(explicit_keys);
    }
    COHORT_RETURN_IF_ERROR(ApplyRunPatch(patch, &r));
    Params p;
    p.Add(r.name).Add(r.group).Add(r.job_type).Add(r.notes).AddJsonb(StringsToJson(r.tags));
    p.Add(r.config_json).AddJsonb(r.config_json).Add(r.summary_json).AddJsonb(r.summary_json);
    p.Add(now).Add(r.pk);
    if (explicit_json) {
      p.Add(*explicit_json);
    } else {
      p.AddNull(pg::kTextOid);
    }
    COHORT_RETURN_IF_ERROR(
        c->Exec("UPDATE runs SET name = $1, grp = $2, job_type = $3, notes = $4, tags = $5, "
                "config = $6, config_doc = $7, summary = $8, summary_doc = $9, "
                "updated_ms = greatest(updated_ms, $10), "
                "summary_explicit = coalesce($12, summary_explicit) WHERE pk = $11",
                p)
            .status());
    return LoadRunByPk(c, r.pk);
  });
}

Status PostgresStore::DeleteRun(const RunRef& ref) {
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(c, ref));
    Params p;
    p.Add(r.pk);
    // Writers before the run: the lock order every ingest uses.
    COHORT_RETURN_IF_ERROR(
        c->Exec("SELECT pk FROM writers WHERE run_pk = $1 ORDER BY pk FOR UPDATE", p).status());
    COHORT_ASSIGN_OR_RETURN(PgResult locked,
                            c->Exec("SELECT pk FROM runs WHERE pk = $1 FOR UPDATE", p));
    if (locked.rows() == 0) return pg::RunNotFound(ref);  // deleted meanwhile
    static constexpr const char* kDeletes[] = {
        "DELETE FROM chunks WHERE series_pk IN (SELECT pk FROM series WHERE run_pk = $1)",
        "DELETE FROM series WHERE run_pk = $1",
        "DELETE FROM console WHERE run_pk = $1",
        "DELETE FROM batches WHERE writer_pk IN (SELECT pk FROM writers WHERE run_pk = $1)",
        "DELETE FROM stream_positions WHERE writer_pk IN "
        "(SELECT pk FROM writers WHERE run_pk = $1)",
        "DELETE FROM run_files WHERE run_pk = $1",
        "DELETE FROM writers WHERE run_pk = $1",
        "DELETE FROM runs WHERE pk = $1",
    };
    for (const char* sql : kDeletes) COHORT_RETURN_IF_ERROR(c->Exec(sql, p).status());
    return Status::Ok();
  });
}

// ---- writers ----

Result<WriterRecord> PostgresStore::JoinWriter(const RunRef& ref, const WriterJoin& join) {
  if (join.label.empty()) return Status::InvalidArgument("writer: label is empty");
  const int64_t now = NowMillis();
  return Write([&](Conn* c) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    {
      Params p;
      p.Add(run.pk).Add(join.label).Add(join.primary).Add(join.update_finish_state);
      p.Add(join.host).Add(join.pid).Add(IntsToJson(join.gpu_ids)).Add(now);
      COHORT_RETURN_IF_ERROR(
          c->Exec("INSERT INTO writers (run_pk, label, is_primary, update_finish_state, host, "
                  "pid, gpu_ids, state, created_ms, heartbeat_ms) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $8) "
                  "ON CONFLICT (run_pk, label) DO UPDATE SET is_primary = excluded.is_primary, "
                  "update_finish_state = excluded.update_finish_state, host = excluded.host, "
                  "pid = excluded.pid, gpu_ids = excluded.gpu_ids, state = 'running', "
                  "exit_code = NULL, finished_ms = NULL, "
                  "heartbeat_ms = excluded.heartbeat_ms",
                  p)
              .status());
    }
    // The run's lock, then the count in a later statement (sees writers joined concurrently).
    COHORT_RETURN_IF_ERROR(LoadRunByPk(c, run.pk).status());
    {
      Params p;
      p.Add(now).Add(run.pk);
      COHORT_RETURN_IF_ERROR(
          c->Exec("UPDATE runs SET writer_count = (SELECT count(*) FROM writers WHERE run_pk = "
                  "runs.pk), heartbeat_ms = greatest(heartbeat_ms, $1) WHERE pk = $2",
                  p)
              .status());
    }
    COHORT_RETURN_IF_ERROR(RecomputeRunState(c, run.pk, now));
    return LoadWriter(c, run.pk, ref, join.label);
  });
}

Result<std::vector<WriterRecord>> PostgresStore::ListWriters(const RunRef& ref) {
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<WriterRecord>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    return LoadWriters(c, run.pk);
  });
}

Status PostgresStore::Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) {
  return Write([&](Conn* c) -> Status {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(now_ms).Add(run.pk).Add(label);
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("UPDATE writers SET heartbeat_ms = greatest(heartbeat_ms, $1) "
                                    "WHERE run_pk = $2 AND label = $3",
                                    p));
    if (res.affected() == 0) return pg::WriterNotFound(ref, label);
    Params q;
    q.Add(now_ms).Add(run.pk);
    return c->Exec("UPDATE runs SET heartbeat_ms = greatest(heartbeat_ms, $1) WHERE pk = $2", q)
        .status();
  });
}

Result<WriterRecord> PostgresStore::FinishWriter(const RunRef& ref, const std::string& label,
                                                 RunState state, std::optional<int> exit_code,
                                                 int64_t now_ms) {
  if (!IsTerminal(state)) {
    return Status::InvalidArgument("finish: state '" + std::string(RunStateName(state)) +
                                   "' does not end a writer");
  }
  return Write([&](Conn* c) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(RunStateName(state)).Add(exit_code).Add(now_ms).Add(run.pk).Add(label);
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("UPDATE writers SET state = $1, exit_code = $2, "
                                    "finished_ms = $3 WHERE run_pk = $4 AND label = $5",
                                    p));
    if (res.affected() == 0) return pg::WriterNotFound(ref, label);
    COHORT_RETURN_IF_ERROR(RecomputeRunState(c, run.pk, now_ms));  // locks the run row first
    COHORT_RETURN_IF_ERROR(FollowSummary(c, run.pk));
    return LoadWriter(c, run.pk, ref, label);
  });
}

Result<int64_t> PostgresStore::MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) {
  return Write([&](Conn* c) -> Result<int64_t> {
    Params p;
    p.Add(now_ms).Add(stale_before_ms);
    COHORT_ASSIGN_OR_RETURN(
        PgResult res, c->Exec("UPDATE writers SET state = 'crashed', finished_ms = $1 "
                              "WHERE state = 'running' AND heartbeat_ms < $2 RETURNING run_pk",
                              p));
    std::set<int64_t> runs;  // ordered: runs are locked in pk order
    for (int i = 0; i < res.rows(); ++i) runs.insert(res.Int(i, 0));
    for (int64_t run_pk : runs) {
      COHORT_RETURN_IF_ERROR(RecomputeRunState(c, run_pk, now_ms));  // locks the run row first
      COHORT_RETURN_IF_ERROR(FollowSummary(c, run_pk));
    }
    return int64_t(res.rows());
  });
}

}  // namespace cohort::store
