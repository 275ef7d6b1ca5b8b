// SqliteStore: opening, the connection pool, runs and writers. Run listing is in
// sqlite_run_list.cc, data in sqlite_series.cc, views and API keys in sqlite_meta.cc.
#include "store/sqlite/sqlite_store.h"

#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/clock.h"
#include "core/ids.h"
#include "store/record_json.h"
#include "store/run_state.h"
#include "store/run_summary.h"
#include "store/run_update.h"
#include "store/sqlite/sqlite_chunk_rows.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_schema.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

// ---- opening and connections ----

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  if (options.path.empty()) return Status::InvalidArgument("sqlite: empty database path");
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  COHORT_ASSIGN_OR_RETURN(store->writer_, store->OpenConnection(/*writer=*/true));
  COHORT_RETURN_IF_ERROR(sqlite::Migrate(store->writer_.get()));
  if (options.background_checkpoints) {
    COHORT_RETURN_IF_ERROR(
        store->checkpointer_.Start(store->writer_.get(), options.path, options.busy_timeout_ms));
  }
  return store;
}

SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<Db>> SqliteStore::OpenConnection(bool writer) {
  int flags = SQLITE_OPEN_READWRITE | (writer ? SQLITE_OPEN_CREATE : 0);
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Db> db,
                          Db::Open(options_.path, flags, options_.busy_timeout_ms));
  if (writer) {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare("PRAGMA journal_mode=WAL"));
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row || st.Text(0) != "wal") {
      return Status::IOError("sqlite: could not switch " + options_.path + " to WAL mode");
    }
    COHORT_RETURN_IF_ERROR(db->Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                              : "PRAGMA synchronous=NORMAL"));
    COHORT_RETURN_IF_ERROR(db->Exec("PRAGMA cache_size=-32768; PRAGMA temp_store=MEMORY"));
  } else {
    COHORT_RETURN_IF_ERROR(db->Exec("PRAGMA query_only=1; PRAGMA cache_size=-16384"));
  }
  return db;
}

SqliteStore::ReadLease::~ReadLease() {
  if (db_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->pool_mu_);
  if (int(owner_->idle_readers_.size()) < owner_->options_.read_connections) {
    owner_->idle_readers_.push_back(std::move(db_));
  }
}

Result<SqliteStore::ReadLease> SqliteStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Db> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReadLease(this, std::move(db));
    }
  }
  // None idle: open another rather than wait; the surplus is closed when returned.
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenConnection(/*writer=*/false));
  return ReadLease(this, std::move(db));
}

// ---- shared helpers ----

Result<RunRecord> SqliteStore::LoadRun(Db* db, const RunRef& ref) {
  static const std::string kSql = std::string("SELECT ") + sqlite::kRunColumns +
                                  " FROM runs r WHERE r.entity = ? AND r.project = ? AND "
                                  "r.run_id = ?";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(ref.entity).Bind(ref.project).Bind(ref.run_id);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return sqlite::RunNotFound(ref);
  return sqlite::ReadRun(st);
}

Result<RunRecord> SqliteStore::LoadRunByPk(Db* db, int64_t pk) {
  static const std::string kSql =
      std::string("SELECT ") + sqlite::kRunColumns + " FROM runs r WHERE r.pk = ?";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(pk);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Status::NotFound("run #" + std::to_string(pk) + " not found");
  return sqlite::ReadRun(st);
}

Result<WriterRecord> SqliteStore::LoadWriter(Db* db, int64_t run_pk, const RunRef& ref,
                                             const std::string& label) {
  static const std::string kSql = std::string("SELECT ") + sqlite::kWriterColumns +
                                  " FROM writers w WHERE w.run_pk = ? AND w.label = ?";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(run_pk).Bind(label);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return sqlite::WriterNotFound(ref, label);
  return sqlite::ReadWriter(st);
}

Result<std::vector<WriterRecord>> SqliteStore::LoadWriters(Db* db, int64_t run_pk) {
  static const std::string kSql = std::string("SELECT ") + sqlite::kWriterColumns +
                                  " FROM writers w WHERE w.run_pk = ? ORDER BY w.pk";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(run_pk);
  std::vector<WriterRecord> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(sqlite::ReadWriter(st));
  }
  return out;
}

Status SqliteStore::RecomputeRunState(Db* db, int64_t run_pk, int64_t now_ms) {
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRunByPk(db, run_pk));
  COHORT_ASSIGN_OR_RETURN(std::vector<WriterRecord> writers, LoadWriters(db, run_pk));
  RederiveRunState(writers, &run);
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE runs SET state = ?, exit_code = ?, "
                                              "finished_ms = ?, updated_ms = ? WHERE pk = ?"));
  st.Bind(RunStateName(run.state)).Bind(run.exit_code).Bind(run.finished_ms);
  st.Bind(std::max(now_ms, run.updated_ms)).Bind(run_pk);
  return st.Run();
}

namespace {

// The last point of each user series of the run's primary writers (of all writers when none is
// primary): the value at the highest step of the series' newest chunk (chunk indexes only grow,
// so it holds what the writer stored last; a NaN value is stored as NULL). One index lookup per
// series.
constexpr const char* kLastPointsSql =
    "SELECT s.key, c.vlast, c.max_step, c.max_time, c.vlast IS NULL FROM series s "
    "JOIN writers w ON w.pk = s.writer_pk "
    "JOIN chunks c ON c.pk = (SELECT c2.pk FROM chunks c2 WHERE c2.series_pk = s.pk "
    "ORDER BY c2.idx DESC LIMIT 1) "
    "WHERE s.run_pk = ?1 AND s.is_system = 0 AND (w.is_primary = 1 OR NOT EXISTS "
    "(SELECT 1 FROM writers w2 WHERE w2.run_pk = ?1 AND w2.is_primary = 1))";

// The last stored point of each user series of the run's primary writers (`keys`: only those;
// null: all), inside the caller's transaction.
Result<LastPoints> LoadLastPoints(Db* db, int64_t run_pk, const std::set<std::string>* keys) {
  LastPoints out;
  auto read = [&](Stmt& st) -> Status {
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) return Status::Ok();
      const double v = st.Int(4) != 0 ? std::numeric_limits<double>::quiet_NaN() : st.Double(1);
      out.Add(st.Text(0), LastPoint{v, st.Int(2), st.Int(3)});
    }
  };
  if (keys == nullptr) {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kLastPointsSql));
    st.Bind(run_pk);
    COHORT_RETURN_IF_ERROR(read(st));
    return out;
  }
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(std::string(kLastPointsSql) + " AND s.key = ?2"));
  for (const std::string& key : *keys) {
    st.Reset();
    st.Bind(run_pk).Bind(key);
    COHORT_RETURN_IF_ERROR(read(st));
  }
  return out;
}

// The run's summary following its last stored points (store/run_summary.h), inside the caller's
// write transaction.
Status FollowSummary(Db* db, int64_t run_pk) {
  std::string summary, explicit_keys;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("SELECT summary, summary_explicit FROM runs WHERE pk = ?"));
    st.Bind(run_pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::Ok();
    summary = st.Text(0);
    explicit_keys = st.Text(1);
  }
  COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(db, run_pk, nullptr));
  std::optional<std::string> next =
      store::FollowLastPoints(summary, last, ExplicitKeysFromJson(explicit_keys));
  if (!next) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE runs SET summary = ? WHERE pk = ?"));
  st.Bind(*next).Bind(run_pk);
  return st.Run();
}

}  // namespace

// ---- runs ----

Result<std::pair<RunRecord, bool>> SqliteStore::UpsertRun(const RunUpsert& upsert) {
  COHORT_RETURN_IF_ERROR(ValidateRunRef(upsert.ref, /*allow_empty_id=*/true));
  std::string tags_json = upsert.tags ? StringsToJson(*upsert.tags) : "[]";
  std::string metadata = "{}";
  if (upsert.metadata_json) {
    COHORT_ASSIGN_OR_RETURN(metadata, MergeJsonObject("{}", *upsert.metadata_json, "metadata"));
  }
  const int64_t now = NowMillis();

  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  RunRef ref = upsert.ref;
  std::optional<RunRecord> existing;
  if (ref.run_id.empty()) {
    for (int attempt = 0;; ++attempt) {
      ref.run_id = ids::RandomBase36(8);
      Result<RunRecord> clash = LoadRun(db, ref);
      if (!clash.ok() && clash.status().code() == StatusCode::kNotFound) break;
      if (!clash.ok()) return clash.status();
      if (attempt == 16) return Status::Internal("could not draw an unused run id");
    }
  } else {
    Result<RunRecord> found = LoadRun(db, ref);
    if (found.ok()) {
      existing = std::move(found).value();
    } else if (found.status().code() != StatusCode::kNotFound) {
      return found.status();
    }
  }

  int64_t pk = 0;
  if (!existing) {
    std::string config = "{}";
    if (upsert.config_json) {
      COHORT_ASSIGN_OR_RETURN(config, MergeJsonObject("{}", *upsert.config_json, "config"));
    }
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("INSERT INTO runs (entity, project, run_id, name, grp, job_type, notes, "
                   "host, tags, config, metadata, created_ms, updated_ms, heartbeat_ms) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    st.Bind(ref.entity).Bind(ref.project).Bind(ref.run_id);
    st.Bind(upsert.name.value_or("")).Bind(upsert.group.value_or(""));
    st.Bind(upsert.job_type.value_or("")).Bind(upsert.notes.value_or(""));
    st.Bind(upsert.host.value_or("")).Bind(tags_json).Bind(config).Bind(metadata);
    st.Bind(now).Bind(now).Bind(now);
    COHORT_RETURN_IF_ERROR(st.Run());
    pk = db->LastInsertRowid();
  } else {
    RunRecord& r = *existing;
    pk = r.pk;
    COHORT_RETURN_IF_ERROR(ApplyRunUpsert(upsert, metadata, &r));
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE runs SET name = ?, grp = ?, job_type = ?, notes = ?, host = ?, "
                            "tags = ?, config = ?, metadata = ?, updated_ms = ? WHERE pk = ?"));
    st.Bind(r.name).Bind(r.group).Bind(r.job_type).Bind(r.notes).Bind(r.host);
    st.Bind(StringsToJson(r.tags)).Bind(r.config_json).Bind(r.metadata_json);
    st.Bind(std::max(now, r.updated_ms)).Bind(pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(db, pk));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return std::make_pair(std::move(out), !existing.has_value());
}

Result<RunRecord> SqliteStore::GetRun(const RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  return LoadRun(db.get(), ref);
}

Result<RunRecord> SqliteStore::PatchRun(const RunRef& ref, const RunPatch& patch) {
  const int64_t now = NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(db, ref));
  // A summary key set to its series' last stored point keeps following it; any other value
  // makes it explicit (store/run_summary.h).
  std::optional<std::string> explicit_json;
  if (patch.summary_json) {
    COHORT_ASSIGN_OR_RETURN(std::set<std::string> keys, SummaryPatchKeys(*patch.summary_json));
    COHORT_ASSIGN_OR_RETURN(LastPoints last, LoadLastPoints(db, r.pk, &keys));
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("SELECT summary_explicit FROM runs WHERE pk = ?"));
    st.Bind(r.pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    std::set<std::string> explicit_keys = ExplicitKeysFromJson(row ? st.Text(0) : "[]");
    COHORT_RETURN_IF_ERROR(ClassifySummaryPatch(*patch.summary_json, last, &explicit_keys));
    explicit_json = ExplicitKeysToJson(explicit_keys);
  }
  COHORT_RETURN_IF_ERROR(ApplyRunPatch(patch, &r));
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("UPDATE runs SET name = ?, grp = ?, job_type = ?, notes = ?, tags = ?, "
                          "config = ?, summary = ?, summary_explicit = coalesce(?, "
                          "summary_explicit), updated_ms = ? WHERE pk = ?"));
  st.Bind(r.name).Bind(r.group).Bind(r.job_type).Bind(r.notes).Bind(StringsToJson(r.tags));
  st.Bind(r.config_json).Bind(r.summary_json);
  if (explicit_json) {
    st.Bind(*explicit_json);
  } else {
    st.BindNull();
  }
  st.Bind(std::max(now, r.updated_ms)).Bind(r.pk);
  COHORT_RETURN_IF_ERROR(st.Run());
  COHORT_ASSIGN_OR_RETURN(RunRecord out, LoadRunByPk(db, r.pk));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Status SqliteStore::DeleteRun(const RunRef& ref) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(db, ref));
  static constexpr const char* kDeletes[] = {
      "DELETE FROM chunks WHERE series_pk IN (SELECT pk FROM series WHERE run_pk = ?)",
      "DELETE FROM chunk_pages WHERE series_pk IN (SELECT pk FROM series WHERE run_pk = ?)",
      "DELETE FROM series WHERE run_pk = ?",
      "DELETE FROM console WHERE run_pk = ?",
      "DELETE FROM batches WHERE writer_pk IN (SELECT pk FROM writers WHERE run_pk = ?)",
      "DELETE FROM stream_positions WHERE writer_pk IN (SELECT pk FROM writers WHERE run_pk = ?)",
      "DELETE FROM run_files WHERE run_pk = ?",
      "DELETE FROM writers WHERE run_pk = ?",
      "DELETE FROM runs WHERE pk = ?",
  };
  for (const char* sql : kDeletes) {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(sql));
    st.Bind(r.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  return txn.Commit();
}

// ---- writers ----

Result<WriterRecord> SqliteStore::JoinWriter(const RunRef& ref, const WriterJoin& join) {
  if (join.label.empty()) return Status::InvalidArgument("writer: label is empty");
  const int64_t now = NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("INSERT INTO writers (run_pk, label, is_primary, update_finish_state, host, "
                   "pid, gpu_ids, state, created_ms, heartbeat_ms) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?) "
                   "ON CONFLICT (run_pk, label) DO UPDATE SET is_primary = excluded.is_primary, "
                   "update_finish_state = excluded.update_finish_state, host = excluded.host, "
                   "pid = excluded.pid, gpu_ids = excluded.gpu_ids, state = 'running', "
                   "exit_code = NULL, finished_ms = NULL, heartbeat_ms = excluded.heartbeat_ms"));
    st.Bind(run.pk).Bind(join.label).Bind(join.primary).Bind(join.update_finish_state);
    st.Bind(join.host).Bind(join.pid).Bind(IntsToJson(join.gpu_ids)).Bind(now).Bind(now);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE runs SET writer_count = (SELECT count(*) FROM writers "
                            "WHERE run_pk = runs.pk), heartbeat_ms = max(heartbeat_ms, ?) "
                            "WHERE pk = ?"));
    st.Bind(now).Bind(run.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  COHORT_RETURN_IF_ERROR(RecomputeRunState(db, run.pk, now));
  COHORT_ASSIGN_OR_RETURN(WriterRecord out, LoadWriter(db, run.pk, ref, join.label));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<std::vector<WriterRecord>> SqliteStore::ListWriters(const RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db.get(), ref));
  return LoadWriters(db.get(), run.pk);
}

Status SqliteStore::Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) {
  return group_.Run([&](Db* db) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
    {
      COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE writers SET heartbeat_ms = "
                                                  "max(heartbeat_ms, ?) WHERE run_pk = ? AND "
                                                  "label = ?"));
      st.Bind(now_ms).Bind(run.pk).Bind(label);
      COHORT_RETURN_IF_ERROR(st.Run());
      if (db->Changes() == 0) return sqlite::WriterNotFound(ref, label);
    }
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE runs SET heartbeat_ms = max(heartbeat_ms, ?) WHERE pk = ?"));
    st.Bind(now_ms).Bind(run.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
    return true;
  });
}

Result<int64_t> SqliteStore::Heartbeats(const std::vector<HeartbeatUpdate>& updates) {
  if (updates.empty()) return int64_t{0};
  int64_t updated = 0;
  COHORT_RETURN_IF_ERROR(group_.Run([&](Db* db) -> Result<bool> {
    updated = 0;
    // Run keys once per run; each run's heartbeat moves to its writers' latest.
    std::map<std::tuple<std::string, std::string, std::string>, std::pair<int64_t, int64_t>> runs;
    COHORT_ASSIGN_OR_RETURN(Stmt run_pk,
                            db->Cached("SELECT pk FROM runs WHERE entity = ? AND project = ? AND "
                                       "run_id = ?"));
    COHORT_ASSIGN_OR_RETURN(Stmt writer, db->Cached("UPDATE writers SET heartbeat_ms = "
                                                    "max(heartbeat_ms, ?) WHERE run_pk = ? AND "
                                                    "label = ?"));
    for (const HeartbeatUpdate& u : updates) {
      auto [it, fresh] = runs.try_emplace({u.ref.entity, u.ref.project, u.ref.run_id}, 0, 0);
      if (fresh) {
        run_pk.Reset();
        run_pk.Bind(u.ref.entity).Bind(u.ref.project).Bind(u.ref.run_id);
        COHORT_ASSIGN_OR_RETURN(bool row, run_pk.Step());
        if (row) it->second.first = run_pk.Int(0);
      }
      if (it->second.first == 0) continue;  // the run is gone
      writer.Reset();
      writer.Bind(u.now_ms).Bind(it->second.first).Bind(u.label);
      COHORT_RETURN_IF_ERROR(writer.Run());
      if (db->Changes() == 0) continue;  // the writer is gone
      ++updated;
      it->second.second = std::max(it->second.second, u.now_ms);
    }
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE runs SET heartbeat_ms = max(heartbeat_ms, ?) WHERE pk = ?"));
    for (const auto& [key, pk_ms] : runs) {
      if (pk_ms.first == 0 || pk_ms.second == 0) continue;
      st.Reset();
      st.Bind(pk_ms.second).Bind(pk_ms.first);
      COHORT_RETURN_IF_ERROR(st.Run());
    }
    return true;
  }));
  return updated;
}

Result<WriterRecord> SqliteStore::FinishWriter(const RunRef& ref, const std::string& label,
                                               RunState state, std::optional<int> exit_code,
                                               int64_t now_ms) {
  if (!IsTerminal(state)) {
    return Status::InvalidArgument("finish: state '" + std::string(RunStateName(state)) +
                                   "' does not end a writer");
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE writers SET state = ?, exit_code = ?, "
                                                "finished_ms = ? WHERE run_pk = ? AND label = ?"));
    st.Bind(RunStateName(state)).Bind(exit_code).Bind(now_ms).Bind(run.pk).Bind(label);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) return sqlite::WriterNotFound(ref, label);
  }
  COHORT_RETURN_IF_ERROR(FollowSummary(db, run.pk));
  COHORT_RETURN_IF_ERROR(RecomputeRunState(db, run.pk, now_ms));
  COHORT_ASSIGN_OR_RETURN(WriterRecord out, LoadWriter(db, run.pk, ref, label));
  // A finished writer's series keep no small tail chunks (series::PlanTailSeal).
  COHORT_RETURN_IF_ERROR(sqlite::SealWriterTails(db, out.pk));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<int64_t> SqliteStore::MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  std::set<int64_t> runs;
  int64_t marked = 0;
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE writers SET state = 'crashed', finished_ms = ? "
                            "WHERE state = 'running' AND heartbeat_ms < ? RETURNING run_pk"));
    st.Bind(now_ms).Bind(stale_before_ms);
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      runs.insert(st.Int(0));
      ++marked;
    }
  }
  for (int64_t run_pk : runs) {
    COHORT_RETURN_IF_ERROR(FollowSummary(db, run_pk));
    COHORT_RETURN_IF_ERROR(RecomputeRunState(db, run_pk, now_ms));
  }
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return marked;
}

}  // namespace cohort::store
