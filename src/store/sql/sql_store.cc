// SqlStore: the shared helpers, runs and writers. Run listing is in sql_run_list.cc; series,
// console and stream positions in sql_store_data.cc; views, keys and files in
// sql_store_meta.cc; retention and the dump in sql_store_admin.cc.
#include "store/sql/sql_store.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "core/clock.h"
#include "core/ids.h"
#include "store/ingest_plan.h"
#include "store/record_checks.h"
#include "store/record_json.h"
#include "store/run_ref.h"
#include "store/run_state.h"
#include "store/run_summary.h"
#include "store/run_update.h"
#include "store/sql/sql_rows.h"
#include "store/sql/sql_schema.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

const std::string kSelectRun = std::string("SELECT ") + kRunColumns +
                               " FROM runs r WHERE r.entity = $1 AND r.project = $2 AND "
                               "r.run_id = $3";
const std::string kSelectRunForUpdate = kSelectRun + " FOR UPDATE";

RunRecord ReadRun(const Row& row) { return ReadRunRow(row); }
WriterRecord ReadWriter(const Row& row) { return ReadWriterRow(row); }

// The last point of each user series of the run's primary writers (of all writers when none is
// primary): the value at the highest step of the series' newest chunk (chunk indexes only grow,
// so it holds what the writer stored last; SQLite keeps a NaN as NULL, which reads as NaN). One
// index lookup per series.
constexpr const char* kLastPointsSql =
    "SELECT s.key, c.vlast, c.max_step, c.max_time FROM series s "
    "JOIN writers w ON w.pk = s.writer_pk "
    "JOIN chunks c ON c.series_pk = s.pk AND c.idx = "
    "(SELECT max(c2.idx) FROM chunks c2 WHERE c2.series_pk = s.pk) "
    "WHERE s.run_pk = $1 AND NOT s.is_system AND (w.is_primary OR NOT EXISTS "
    "(SELECT 1 FROM writers w2 WHERE w2.run_pk = $1 AND w2.is_primary))";

// The last stored point of each user series of the run's primary writers (`keys`: only those;
// null: all), inside the caller's transaction.
Result<LastPoints> LoadLastPoints(Conn& conn, int64_t run_pk, const std::set<std::string>* keys) {
  static const std::string kByKeys = std::string(kLastPointsSql) + " AND s.key = ANY($2)";
  Params p;
  p.Add(run_pk);
  if (keys != nullptr) p.AddTextArray(std::vector<std::string>(keys->begin(), keys->end()));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                          conn.Query(keys != nullptr ? kByKeys : kLastPointsSql, p));
  LastPoints out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
    if (!row) return out;
    out.Add(rows->Text(0), LastPoint{rows->Double(1), rows->Int(2), rows->Int(3)});
  }
}

// The run's summary following its last stored points (store/run_summary.h), inside the caller's
// write transaction, which holds the run's row lock.
Status FollowSummary(Conn& conn, int64_t run_pk) {
  struct Summary {
    std::string json, explicit_keys;
  };
  COHORT_ASSIGN_OR_RETURN(
      Summary run,
      sql::QueryOne<Summary>(
          conn, "SELECT summary, summary_explicit FROM runs WHERE pk = $1", Params().Add(run_pk),
          [](const Row& row) { return Summary{row.Text(0), row.Text(1)}; },
          Status::NotFound("run #" + std::to_string(run_pk) + " not found")));
  COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(conn, run_pk, nullptr));
  std::optional<std::string> next =
      FollowLastPoints(run.json, last, ExplicitKeysFromJson(run.explicit_keys));
  if (!next) return Status::Ok();
  return conn.Exec("UPDATE runs SET summary = $1 WHERE pk = $2", Params().Add(*next).Add(run_pk))
      .status();
}

}  // namespace

Status SqlStore::MigrateSchema() {
  sql::MigrationRunner runner;
  runner.read = [this](const std::function<Status(Conn&)>& fn) {
    return Run(Access::kReadOne, fn);
  };
  runner.write = [this](const std::function<Status(Conn&)>& fn) { return Run(Access::kWrite, fn); };
  return sql::Migrate(engine_, runner);
}

Status SqlStore::RequireSchema(const std::string& where) {
  Status read = Run(Access::kReadOne, [](Conn& conn) { return sql::SchemaVersion(conn).status(); });
  if (read.ok()) return read;
  return Status::NotFound("no Cohort store in the database (" + where + "): " + read.message());
}

// ---- shared helpers ----

Result<RunRecord> SqlStore::LoadRun(Conn& conn, const RunRef& ref, bool lock) {
  return sql::QueryOne<RunRecord>(conn, lock ? kSelectRunForUpdate : kSelectRun,
                                  Params().Add(ref.entity).Add(ref.project).Add(ref.run_id),
                                  ReadRun, RunNotFound(ref));
}

Result<RunRecord> SqlStore::LoadRunByPk(Conn& conn, int64_t pk) {
  static const std::string kSql =
      std::string("SELECT ") + kRunColumns + " FROM runs r WHERE r.pk = $1 FOR UPDATE";
  return sql::QueryOne<RunRecord>(conn, kSql, Params().Add(pk), ReadRun,
                                  Status::NotFound("run #" + std::to_string(pk) + " not found"));
}

Result<WriterRecord> SqlStore::LoadWriter(Conn& conn, int64_t run_pk, const RunRef& ref,
                                          const std::string& label) {
  static const std::string kSql = std::string("SELECT ") + kWriterColumns +
                                  " FROM writers w WHERE w.run_pk = $1 AND w.label = $2";
  return sql::QueryOne<WriterRecord>(conn, kSql, Params().Add(run_pk).Add(label), ReadWriter,
                                     WriterNotFound(ref, label));
}

Result<std::vector<WriterRecord>> SqlStore::LoadWriters(Conn& conn, int64_t run_pk) {
  static const std::string kSql =
      std::string("SELECT ") + kWriterColumns + " FROM writers w WHERE w.run_pk = $1 ORDER BY w.pk";
  return sql::QueryAll<WriterRecord>(conn, kSql, Params().Add(run_pk), ReadWriter);
}

Status SqlStore::RecomputeRunState(Conn& conn, int64_t run_pk, int64_t now_ms) {
  // Lock first, then read the writers in a later statement: under READ COMMITTED that statement
  // sees every writer change committed by whoever held the run's lock before us.
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRunByPk(conn, run_pk));
  COHORT_ASSIGN_OR_RETURN(std::vector<WriterRecord> writers, LoadWriters(conn, run_pk));
  RederiveRunState(writers, &run);
  return conn
      .Exec(
          "UPDATE runs SET state = $1, exit_code = $2, finished_ms = $3, "
          "updated_ms = greatest(updated_ms, $4) WHERE pk = $5",
          Params()
              .Add(RunStateName(run.state))
              .Add(run.exit_code)
              .Add(run.finished_ms)
              .Add(now_ms)
              .Add(run_pk))
      .status();
}

Result<std::optional<RunRef>> SqlStore::EndOrphanedRun(Conn& conn, int64_t run_pk, int64_t now_ms) {
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRunByPk(conn, run_pk));  // locks the row
  if (run.state != RunState::kRunning) return std::optional<RunRef>();
  COHORT_ASSIGN_OR_RETURN(std::vector<WriterRecord> writers, LoadWriters(conn, run_pk));
  std::optional<DerivedRunState> end = DeriveOrphanedRunEnd(writers);
  if (!end) return std::optional<RunRef>();
  COHORT_RETURN_IF_ERROR(conn.Exec("UPDATE runs SET state = $1, exit_code = $2, finished_ms = $3, "
                                   "updated_ms = greatest(updated_ms, $4) WHERE pk = $5",
                                   Params()
                                       .Add(RunStateName(end->state))
                                       .Add(end->exit_code)
                                       .Add(end->finished_ms)
                                       .Add(now_ms)
                                       .Add(run_pk))
                             .status());
  std::fprintf(stderr,
               "cohort: run %s/%s/%s ended %s: its %zu writer(s) ended, none of them its primary, "
               "and it was silent for the heartbeat timeout\n",
               run.entity.c_str(), run.project.c_str(), run.run_id.c_str(),
               std::string(RunStateName(end->state)).c_str(), writers.size());
  return std::optional<RunRef>(RunRef{run.entity, run.project, run.run_id});
}

// ---- runs ----

Result<std::pair<RunRecord, bool>> SqlStore::UpsertRun(const RunUpsert& upsert) {
  COHORT_RETURN_IF_ERROR(ValidateRunRef(upsert.ref, /*allow_empty_id=*/true));
  const std::string tags_json = upsert.tags ? StringsToJson(*upsert.tags) : "[]";
  std::string metadata = "{}";
  if (upsert.metadata_json) {
    COHORT_ASSIGN_OR_RETURN(metadata, MergeJsonObject("{}", *upsert.metadata_json, "metadata"));
  }
  std::string new_config = "{}";
  if (upsert.config_json) {
    COHORT_ASSIGN_OR_RETURN(
        new_config, MergeJsonObject("{}", *upsert.config_json, "config", PatchNull::kIsValue));
  }
  const int64_t now = NowMillis();

  // Inserts the run unless (entity, project, run_id) exists; returns its pk or 0.
  auto insert = [&](Conn& conn, const RunRef& ref) -> Result<int64_t> {
    Params p;
    p.Add(ref.entity).Add(ref.project).Add(ref.run_id);
    p.Add(upsert.name.value_or("")).Add(upsert.group.value_or(""));
    p.Add(upsert.job_type.value_or("")).Add(upsert.notes.value_or(""));
    p.Add(upsert.host.value_or("")).AddJson(tags_json).Add(new_config).Add(metadata).Add(now);
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<sql::Rows> rows,
        conn.Query("INSERT INTO runs (entity, project, run_id, name, grp, job_type, notes, host, "
                   "tags, config, metadata, created_ms, updated_ms, heartbeat_ms) "
                   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $12) "
                   "ON CONFLICT (entity, project, run_id) DO NOTHING RETURNING pk",
                   p));
    COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
    return row ? rows->Int(0) : int64_t{0};
  };

  using Out = std::pair<RunRecord, bool>;
  return RunFor<Out>(Access::kWrite, [&](Conn& conn) -> Result<Out> {
    RunRef ref = upsert.ref;
    if (ref.run_id.empty()) {
      for (int attempt = 0; attempt < 16; ++attempt) {
        ref.run_id = ids::RandomBase36(8);
        COHORT_ASSIGN_OR_RETURN(int64_t pk, insert(conn, ref));
        if (pk == 0) continue;
        COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(conn, pk));
        return Out(std::move(out), true);
      }
      return Status::Internal("could not draw an unused run id");
    }
    // Resume (lock and update) or create; a create that loses a race to another server finds
    // the row on the next round and resumes it.
    for (int round = 0; round < 3; ++round) {
      Result<RunRecord> found = LoadRun(conn, ref, /*lock=*/true);
      if (!found.ok() && found.status().code() != StatusCode::kNotFound) return found.status();
      if (!found.ok()) {
        if (upsert.resume == ResumeMode::kMust) {
          return Status::NotFound("run '" + ref.run_id + "' not found (resume=must)");
        }
        COHORT_ASSIGN_OR_RETURN(int64_t pk, insert(conn, ref));
        if (pk == 0) continue;  // created meanwhile by another upsert: found next round
        COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(conn, pk));
        return Out(std::move(out), true);
      }
      if (upsert.resume == ResumeMode::kNever) {
        return Status::AlreadyExists("run '" + ref.run_id + "' already exists");
      }
      RunRecord& r = *found;
      COHORT_RETURN_IF_ERROR(ApplyRunUpsert(upsert, metadata, &r));
      Params p;
      p.Add(r.name).Add(r.group).Add(r.job_type).Add(r.notes).Add(r.host);
      p.AddJson(StringsToJson(r.tags)).Add(r.config_json).Add(r.metadata_json).Add(now).Add(r.pk);
      COHORT_RETURN_IF_ERROR(
          conn.Exec("UPDATE runs SET name = $1, grp = $2, job_type = $3, notes = $4, host = $5, "
                    "tags = $6, config = $7, metadata = $8, "
                    "updated_ms = greatest(updated_ms, $9) WHERE pk = $10",
                    p)
              .status());
      COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(conn, r.pk));
      return Out(std::move(out), false);
    }
    return Status::Unavailable("run '" + RunName(ref) +
                               "' is being created and deleted concurrently; retry");
  });
}

Result<RunRecord> SqlStore::GetRun(const RunRef& ref) {
  return RunFor<RunRecord>(Access::kReadOne, [&](Conn& conn) { return LoadRun(conn, ref); });
}

Result<RunRecord> SqlStore::PatchRun(const RunRef& ref, const RunPatch& patch) {
  const int64_t now = NowMillis();
  return RunFor<RunRecord>(Access::kWrite, [&](Conn& conn) -> Result<RunRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(conn, ref, /*lock=*/true));
    // A summary key set to its series' last stored point keeps following it; any other value
    // makes it explicit (store/run_summary.h).
    std::optional<std::string> explicit_json;
    if (patch.summary_json) {
      COHORT_ASSIGN_OR_RETURN(std::set<std::string> keys, SummaryPatchKeys(*patch.summary_json));
      COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(conn, r.pk, &keys));
      COHORT_ASSIGN_OR_RETURN(
          std::string current,
          sql::QueryOne<std::string>(conn, "SELECT summary_explicit FROM runs WHERE pk = $1",
                                     Params().Add(r.pk),
                                     [](const Row& row) { return row.Text(0); }, RunNotFound(ref)));
      std::set<std::string> explicit_keys = ExplicitKeysFromJson(current);
      COHORT_RETURN_IF_ERROR(ClassifySummaryPatch(*patch.summary_json, last, &explicit_keys));
      explicit_json = ExplicitKeysToJson(explicit_keys);
    }
    COHORT_RETURN_IF_ERROR(ApplyRunPatch(patch, &r));
    Params p;
    p.Add(r.name).Add(r.group).Add(r.job_type).Add(r.notes).AddJson(StringsToJson(r.tags));
    p.Add(r.config_json).Add(r.summary_json).Add(now).Add(r.pk);
    if (explicit_json) {
      p.Add(*explicit_json);
    } else {
      p.AddNull(sql::Type::kText);
    }
    COHORT_RETURN_IF_ERROR(
        conn.Exec("UPDATE runs SET name = $1, grp = $2, job_type = $3, notes = $4, tags = $5, "
                  "config = $6, summary = $7, updated_ms = greatest(updated_ms, $8), "
                  "summary_explicit = coalesce($10, summary_explicit) WHERE pk = $9",
                  p)
            .status());
    return LoadRunByPk(conn, r.pk);
  });
}

Status SqlStore::DeleteRun(const RunRef& ref) {
  int64_t run_pk = 0;
  Status st = Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(conn, ref));
    run_pk = r.pk;
    // Before the commit too: on SQLite no batch checks keys while this transaction holds the
    // write lock, and a batch that checked them before does not settle them (RunIngestCache);
    // forgotten only after the commit, a new run given this pk meanwhile saw the old keys.
    run_cache_.Forget(r.pk);
    // Writers before the run: the lock order every ingest uses. Everything under the run goes
    // with it (ON DELETE CASCADE, sql_schema.cc).
    COHORT_RETURN_IF_ERROR(
        conn.Exec("SELECT pk FROM writers WHERE run_pk = $1 ORDER BY pk FOR UPDATE",
                  Params().Add(r.pk))
            .status());
    COHORT_ASSIGN_OR_RETURN(int64_t deleted,
                            conn.Exec("DELETE FROM runs WHERE pk = $1", Params().Add(r.pk)));
    if (deleted == 0) return RunNotFound(ref);  // deleted meanwhile
    // Its open alerts are resolved, not deleted (their events stay in the outbox, whose ids
    // delivery reads without holes): a new run of the same id opens its own.
    return ResolveOpenAlerts(conn, "entity = $1 AND project = $2 AND run_id = $3",
                             Params().Add(ref.entity).Add(ref.project).Add(ref.run_id), NowMillis())
        .status();
  });
  // Whatever the outcome: a SQLite run's pk may be given to a run created later.
  if (run_pk != 0) run_cache_.Forget(run_pk);
  return st;
}

// ---- writers ----

Result<WriterRecord> SqlStore::JoinWriter(const RunRef& ref, const WriterJoin& join) {
  if (join.label.empty()) return Status::InvalidArgument("writer: label is empty");
  const int64_t now = NowMillis();
  return RunFor<WriterRecord>(Access::kWrite, [&](Conn& conn) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    Params p;
    p.Add(run.pk).Add(join.label).Add(join.primary).Add(join.update_finish_state);
    p.Add(join.host).Add(join.pid).Add(IntsToJson(join.gpu_ids)).Add(now);
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO writers (run_pk, label, is_primary, update_finish_state, host, "
                  "pid, gpu_ids, state, created_ms, heartbeat_ms) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $8) "
                  "ON CONFLICT (run_pk, label) DO UPDATE SET is_primary = excluded.is_primary, "
                  "update_finish_state = excluded.update_finish_state, host = excluded.host, "
                  "pid = excluded.pid, gpu_ids = excluded.gpu_ids, state = 'running', "
                  "exit_code = NULL, finished_ms = NULL, heartbeat_ms = excluded.heartbeat_ms, "
                  "end_unhandled = false",
                  p)
            .status());
    // The run's lock, then the count in a later statement (sees writers joined concurrently).
    COHORT_RETURN_IF_ERROR(LoadRunByPk(conn, run.pk).status());
    COHORT_RETURN_IF_ERROR(
        conn.Exec("UPDATE runs SET writer_count = (SELECT count(*) FROM writers WHERE run_pk = "
                  "runs.pk), heartbeat_ms = greatest(heartbeat_ms, $1) WHERE pk = $2",
                  Params().Add(now).Add(run.pk))
            .status());
    COHORT_RETURN_IF_ERROR(RecomputeRunState(conn, run.pk, now));
    return LoadWriter(conn, run.pk, ref, join.label);
  });
}

Result<std::vector<WriterRecord>> SqlStore::ListWriters(const RunRef& ref) {
  using Out = std::vector<WriterRecord>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return LoadWriters(conn, run.pk);
  });
}

namespace {

enum class HeartbeatOutcome { kNoWriter, kMoved, kRevived };

// Moves the heartbeat of writer `label` of run `run_pk` up to now_ms; a writer marked crashed
// without an exit code before now_ms is running again (WriterStore::Heartbeat). The caller
// recomputes the run's state after a kRevived (locking the run row after the writer's).
Result<HeartbeatOutcome> ApplyHeartbeat(Conn& conn, int64_t run_pk, const std::string& label,
                                        int64_t now_ms) {
  struct Seen {
    std::string state;
    bool exit_code_null;
    int64_t finished_ms;
  };
  COHORT_ASSIGN_OR_RETURN(
      std::vector<Seen> seen,
      sql::QueryAll<Seen>(conn,
                          "UPDATE writers SET heartbeat_ms = greatest(heartbeat_ms, $1) WHERE "
                          "run_pk = $2 AND label = $3 RETURNING state, CASE WHEN "
                          "exit_code IS NULL THEN 1 ELSE 0 END, coalesce(finished_ms, 0)",
                          Params().Add(now_ms).Add(run_pk).Add(label), [](const Row& row) {
                            return Seen{row.Text(0), row.Int(1) != 0, row.Int(2)};
                          }));
  if (seen.empty()) return HeartbeatOutcome::kNoWriter;
  const Seen& w = seen.front();
  if (w.state != RunStateName(RunState::kCrashed) || !w.exit_code_null ||
      now_ms - w.finished_ms < kReviveAfterCrashMs) {
    return HeartbeatOutcome::kMoved;
  }
  COHORT_RETURN_IF_ERROR(
      conn.Exec("UPDATE writers SET state = $1, finished_ms = NULL, "
                "end_unhandled = false WHERE run_pk = $2 AND label = $3",
                Params().Add(RunStateName(RunState::kRunning)).Add(run_pk).Add(label))
          .status());
  std::fprintf(stderr,
               "cohort: writer %s of run #%lld heartbeats again: running (it was marked crashed)\n",
               label.c_str(), static_cast<long long>(run_pk));
  return HeartbeatOutcome::kRevived;
}

}  // namespace

Result<bool> SqlStore::Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) {
  return RunFor<bool>(Access::kWriteShared, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_ASSIGN_OR_RETURN(HeartbeatOutcome outcome, ApplyHeartbeat(conn, run.pk, label, now_ms));
    if (outcome == HeartbeatOutcome::kNoWriter) return WriterNotFound(ref, label);
    COHORT_RETURN_IF_ERROR(
        conn.Exec("UPDATE runs SET heartbeat_ms = greatest(heartbeat_ms, $1) WHERE pk = $2",
                  Params().Add(now_ms).Add(run.pk))
            .status());
    if (outcome != HeartbeatOutcome::kRevived) return false;
    COHORT_RETURN_IF_ERROR(RecomputeRunState(conn, run.pk, now_ms));
    return true;
  });
}

Result<HeartbeatsApplied> SqlStore::Heartbeats(const std::vector<HeartbeatUpdate>& updates) {
  if (updates.empty()) return HeartbeatsApplied{};
  return RunFor<
      HeartbeatsApplied>(Access::kWriteShared, [&](Conn& conn) -> Result<HeartbeatsApplied> {
    HeartbeatsApplied out;
    // Run keys once per run; each run's heartbeat moves to its writers' latest. Runs are
    // updated after every writer, in pk order (the lock order of sql_store.h).
    std::map<std::tuple<std::string, std::string, std::string>, int64_t> run_pks;
    std::map<int64_t, int64_t> run_ms;  // run pk -> latest heartbeat of its updated writers
    std::set<int64_t> revived_runs;
    // Writers in one order on every server, so that two servers' flushes cannot deadlock.
    std::vector<const HeartbeatUpdate*> sorted;
    for (const HeartbeatUpdate& u : updates) sorted.push_back(&u);
    std::sort(sorted.begin(), sorted.end(), [](const HeartbeatUpdate* a, const HeartbeatUpdate* b) {
      return std::tie(a->ref.entity, a->ref.project, a->ref.run_id, a->label) <
             std::tie(b->ref.entity, b->ref.project, b->ref.run_id, b->label);
    });
    for (const HeartbeatUpdate* hb : sorted) {
      const HeartbeatUpdate& u = *hb;
      auto [it, fresh] = run_pks.try_emplace({u.ref.entity, u.ref.project, u.ref.run_id}, 0);
      if (fresh) {
        COHORT_ASSIGN_OR_RETURN(
            it->second,
            sql::QueryInt(conn,
                          "SELECT pk FROM runs WHERE entity = $1 AND project = $2 AND "
                          "run_id = $3",
                          Params().Add(u.ref.entity).Add(u.ref.project).Add(u.ref.run_id)));
      }
      if (it->second == 0) continue;  // the run is gone
      COHORT_ASSIGN_OR_RETURN(HeartbeatOutcome outcome,
                              ApplyHeartbeat(conn, it->second, u.label, u.now_ms));
      if (outcome == HeartbeatOutcome::kNoWriter) continue;  // the writer is gone
      ++out.updated;
      if (outcome == HeartbeatOutcome::kRevived) {
        out.revived.push_back(u);
        revived_runs.insert(it->second);
      }
      int64_t& ms = run_ms[it->second];
      ms = std::max(ms, u.now_ms);
    }
    for (const auto& [pk, ms] : run_ms) {
      COHORT_RETURN_IF_ERROR(
          conn.Exec("UPDATE runs SET heartbeat_ms = greatest(heartbeat_ms, $1) WHERE pk = $2",
                    Params().Add(ms).Add(pk))
              .status());
      if (revived_runs.count(pk)) COHORT_RETURN_IF_ERROR(RecomputeRunState(conn, pk, ms));
    }
    return out;
  });
}

Result<WriterRecord> SqlStore::FinishWriter(const RunRef& ref, const std::string& label,
                                            RunState state, std::optional<int> exit_code,
                                            int64_t now_ms) {
  if (!IsTerminal(state)) {
    return Status::InvalidArgument("finish: state '" + std::string(RunStateName(state)) +
                                   "' does not end a writer");
  }
  int64_t tail_rows_deleted = 0;  // by the attempt that committed (a retry sets it again)
  auto finished = RunFor<WriterRecord>(Access::kWrite, [&](Conn& conn) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_ASSIGN_OR_RETURN(
        int64_t changed,
        conn.Exec(
            "UPDATE writers SET state = $1, exit_code = $2, finished_ms = $3, "
            "end_unhandled = true WHERE run_pk = $4 AND label = $5",
            Params().Add(RunStateName(state)).Add(exit_code).Add(now_ms).Add(run.pk).Add(label)));
    if (changed == 0) return WriterNotFound(ref, label);
    COHORT_RETURN_IF_ERROR(RecomputeRunState(conn, run.pk, now_ms));  // locks the run row first
    COHORT_RETURN_IF_ERROR(FollowSummary(conn, run.pk));
    COHORT_ASSIGN_OR_RETURN(WriterRecord out, LoadWriter(conn, run.pk, ref, label));
    COHORT_ASSIGN_OR_RETURN(tail_rows_deleted, AfterWriterFinished(conn, out.pk));
    return out;
  });
  if (finished.ok()) TailRowsCommitted(tail_rows_deleted);
  return finished;
}

Result<StaleSweep> SqlStore::MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) {
  using Out = StaleSweep;
  return RunFor<Out>(Access::kWrite, [&](Conn& conn) -> Result<Out> {
    struct Marked {
      int64_t run_pk;
      std::string label;
      int64_t heartbeat_ms;
    };
    COHORT_ASSIGN_OR_RETURN(
        std::vector<Marked> marked,
        sql::QueryAll<Marked>(conn,
                              "UPDATE writers SET state = 'crashed', finished_ms = $1, "
                              "end_unhandled = true WHERE state = 'running' AND "
                              "heartbeat_ms < $2 "
                              "RETURNING run_pk, label, heartbeat_ms",
                              Params().Add(now_ms).Add(stale_before_ms), [](const Row& row) {
                                return Marked{row.Int(0), row.Text(1), row.Int(2)};
                              }));
    std::set<int64_t> marked_runs;
    for (const Marked& m : marked) marked_runs.insert(m.run_pk);
    // Runs left running by writers that all ended without a controlling writer among them (a
    // shared run whose primary never joined), silent for the timeout: ended
    // (DeriveOrphanedRunEnd). The partial index runs_running holds the running runs only (by pk:
    // an index on heartbeat_ms, which every batch moves, would cost PostgreSQL its HOT updates).
    COHORT_ASSIGN_OR_RETURN(
        std::vector<int64_t> orphans,
        sql::QueryAll<int64_t>(
            conn,
            "SELECT r.pk FROM runs r WHERE r.state = 'running' AND r.heartbeat_ms < $1 AND "
            "EXISTS (SELECT 1 FROM writers w WHERE w.run_pk = r.pk) AND NOT EXISTS (SELECT 1 "
            "FROM writers w WHERE w.run_pk = r.pk AND (w.state = 'running' OR w.is_primary OR "
            "w.update_finish_state))",
            Params().Add(stale_before_ms), [](const Row& row) { return row.Int(0); }));
    const std::set<int64_t> orphaned(orphans.begin(), orphans.end());
    std::set<int64_t> runs = marked_runs;  // locked in pk order
    runs.insert(orphans.begin(), orphans.end());
    std::map<int64_t, RunRef> refs;
    Out out;
    for (int64_t run_pk : runs) {
      if (marked_runs.count(run_pk)) {
        COHORT_RETURN_IF_ERROR(RecomputeRunState(conn, run_pk, now_ms));  // locks the run first
        COHORT_RETURN_IF_ERROR(FollowSummary(conn, run_pk));
      }
      if (orphaned.count(run_pk)) {
        COHORT_ASSIGN_OR_RETURN(std::optional<RunRef> ended, EndOrphanedRun(conn, run_pk, now_ms));
        if (ended) out.orphans_ended.push_back(std::move(*ended));
      }
      if (!marked_runs.count(run_pk)) continue;
      COHORT_ASSIGN_OR_RETURN(
          RunRef ref,
          sql::QueryOne<RunRef>(
              conn, "SELECT entity, project, run_id FROM runs WHERE pk = $1", Params().Add(run_pk),
              [](const Row& row) {
                return RunRef{row.Text(0), row.Text(1), row.Text(2)};
              },
              Status::Internal("a marked writer's run vanished")));
      refs.emplace(run_pk, std::move(ref));
    }
    for (Marked& m : marked) {
      out.crashed.push_back(CrashedWriter{refs.at(m.run_pk), std::move(m.label), m.heartbeat_ms});
    }
    return out;
  });
}

Result<std::vector<EndedWriter>> SqlStore::ListUnhandledWriterEnds(int limit) {
  using Out = std::vector<EndedWriter>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<EndedWriter>(
        conn,
        "SELECT u.entity, u.project, u.run_id, w.label, w.state, w.exit_code, w.heartbeat_ms, "
        "w.finished_ms, u.state FROM writers w JOIN runs u ON u.pk = w.run_pk "
        "WHERE w.end_unhandled ORDER BY w.finished_ms, w.pk LIMIT $1",
        Params().Add(int64_t(limit > 0 ? limit : 1000)), [](const Row& row) {
          EndedWriter e;
          e.run = RunRef{row.Text(0), row.Text(1), row.Text(2)};
          e.label = row.Text(3);
          e.state = ParseRunState(row.Text(4)).value_or(RunState::kCrashed);
          if (!row.IsNull(5)) e.exit_code = int(row.Int(5));
          e.heartbeat_ms = row.Int(6);
          e.finished_ms = row.IsNull(7) ? 0 : row.Int(7);
          e.run_ended = IsTerminal(ParseRunState(row.Text(8)).value_or(RunState::kRunning));
          return e;
        });
  });
}

Status SqlStore::MarkWriterEndHandled(const RunRef& ref, const std::string& label,
                                      int64_t finished_ms) {
  return Run(Access::kWriteShared, [&](Conn& conn) -> Status {
    return conn
        .Exec("UPDATE writers SET end_unhandled = false WHERE end_unhandled AND label = $1 AND "
              "finished_ms = $2 AND run_pk = (SELECT pk FROM runs WHERE entity = $3 AND "
              "project = $4 AND run_id = $5)",
              Params().Add(label).Add(finished_ms).Add(ref.entity).Add(ref.project).Add(ref.run_id))
        .status();
  });
}

Result<WriterRecord> SqlStore::RenameWriter(const RunRef& ref, const std::string& from,
                                            const std::string& to) {
  if (to.empty()) return Status::InvalidArgument("writer: label is empty");
  return RunFor<WriterRecord>(Access::kWrite, [&](Conn& conn) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_ASSIGN_OR_RETURN(
        int64_t writer_pk,
        sql::QueryOne<int64_t>(
            conn, "SELECT pk FROM writers WHERE run_pk = $1 AND label = $2 FOR UPDATE",
            Params().Add(run.pk).Add(from), [](const Row& row) { return row.Int(0); },
            WriterNotFound(ref, from)));
    if (from == to) return LoadWriter(conn, run.pk, ref, from);
    COHORT_ASSIGN_OR_RETURN(
        int64_t taken, sql::QueryInt(conn, "SELECT 1 FROM writers WHERE run_pk = $1 AND label = $2",
                                     Params().Add(run.pk).Add(to)));
    if (taken != 0) return WriterLabelTaken(ref, to);
    Result<int64_t> updated =
        conn.Exec("UPDATE writers SET label = $1 WHERE pk = $2", Params().Add(to).Add(writer_pk));
    // A rename racing another server's join of the same label.
    if (!updated.ok() && updated.status().code() == StatusCode::kAlreadyExists) {
      return WriterLabelTaken(ref, to);
    }
    COHORT_RETURN_IF_ERROR(updated.status());
    return LoadWriter(conn, run.pk, ref, to);
  });
}

}  // namespace cohort::store
