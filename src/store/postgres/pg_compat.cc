// PostgresStore: what the W&B compatibility layer (src/server/compat) needs beyond Cohort's own
// API: stream positions of writers, renaming a writer, and files attached to runs. Semantics as
// sqlite_compat.cc.
#include "core/clock.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"
#include "store/record_checks.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

Result<std::map<std::string, std::map<std::string, int64_t>>> PostgresStore::ListStreamPositions(
    const RunRef& ref) {
  using Positions = std::map<std::string, std::map<std::string, int64_t>>;
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Result<Positions> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk);
    COHORT_ASSIGN_OR_RETURN(
        PgResult res, c->Exec("SELECT w.label, p.stream, p.next_offset FROM stream_positions p "
                              "JOIN writers w ON w.pk = p.writer_pk WHERE w.run_pk = $1",
                              p));
    Positions out;
    for (int i = 0; i < res.rows(); ++i) out[res.Text(i, 0)][res.Text(i, 1)] = res.Int(i, 2);
    return out;
  });
}

Result<WriterRecord> PostgresStore::RenameWriter(const RunRef& ref, const std::string& from,
                                                 const std::string& to) {
  if (to.empty()) return Status::InvalidArgument("writer: label is empty");
  return Write([&](Conn* c) -> Result<WriterRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk).Add(from);
    COHORT_ASSIGN_OR_RETURN(
        PgResult locked,
        c->Exec("SELECT pk FROM writers WHERE run_pk = $1 AND label = $2 FOR UPDATE", p));
    if (locked.rows() == 0) return pg::WriterNotFound(ref, from);
    if (from == to) return LoadWriter(c, run.pk, ref, from);
    Params q;
    q.Add(run.pk).Add(to);
    COHORT_ASSIGN_OR_RETURN(PgResult clash,
                            c->Exec("SELECT 1 FROM writers WHERE run_pk = $1 AND label = $2", q));
    if (clash.rows() > 0) return WriterLabelTaken(ref, to);
    Params u;
    u.Add(to).Add(locked.Int(0, 0));
    Result<PgResult> updated = c->Exec("UPDATE writers SET label = $1 WHERE pk = $2", u);
    if (!updated.ok() && updated.status().code() == StatusCode::kAlreadyExists)
      return WriterLabelTaken(ref, to);
    COHORT_RETURN_IF_ERROR(updated.status());
    return LoadWriter(c, run.pk, ref, to);
  });
}

Result<RunFile> PostgresStore::PutRunFile(const RunRef& ref, const RunFile& file) {
  COHORT_RETURN_IF_ERROR(ValidateFileName(file.name));
  const int64_t now = file.updated_ms > 0 ? file.updated_ms : NowMillis();
  return Write([&](Conn* c) -> Result<RunFile> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk).Add(file.name).Add(file.content_type).Add(int64_t(file.data.size())).Add(now);
    p.AddBytes(file.data);
    COHORT_RETURN_IF_ERROR(
        c->Exec("INSERT INTO run_files (run_pk, name, content_type, size, updated_ms, data) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_pk, name) DO UPDATE SET "
                "content_type = excluded.content_type, size = excluded.size, "
                "updated_ms = excluded.updated_ms, data = excluded.data",
                p)
            .status());
    Params q;
    q.Add(now).Add(run.pk);
    COHORT_RETURN_IF_ERROR(
        c->Exec("UPDATE runs SET updated_ms = greatest(updated_ms, $1) WHERE pk = $2", q).status());
    return StoredRunFile(file, now);
  });
}

Result<std::vector<RunFile>> PostgresStore::ListRunFiles(const RunRef& ref) {
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<RunFile>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk);
    static const std::string kSql = std::string("SELECT ") + kRunFileColumns +
                                    " FROM run_files WHERE run_pk = $1 ORDER BY name";
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    std::vector<RunFile> out;
    for (int i = 0; i < res.rows(); ++i) out.push_back(ReadRunFileRow(pg::PgRow(res, i)));
    return out;
  });
}

Result<RunFile> PostgresStore::GetRunFile(const RunRef& ref, const std::string& name) {
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Result<RunFile> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk).Add(name);
    static const std::string kSql = std::string("SELECT ") + kRunFileColumns +
                                    ", data FROM run_files WHERE run_pk = $1 AND name = $2";
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    if (res.rows() == 0) return RunFileNotFound(ref, name);
    RunFile f = ReadRunFileRow(pg::PgRow(res, 0));
    f.data = res.Bytes(0, 4);
    return f;
  });
}

}  // namespace cohort::store
