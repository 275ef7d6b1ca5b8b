// SqliteStore: what the W&B compatibility layer (src/server/compat) needs beyond Cohort's own
// API: stream positions of writers, renaming a writer, and files attached to runs.
#include "core/clock.h"
#include "store/record_checks.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

Result<std::map<std::string, std::map<std::string, int64_t>>> SqliteStore::ListStreamPositions(
    const RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT w.label, p.stream, p.next_offset FROM stream_positions p "
                          "JOIN writers w ON w.pk = p.writer_pk WHERE w.run_pk = ?"));
  st.Bind(run.pk);
  std::map<std::string, std::map<std::string, int64_t>> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out[st.Text(0)][st.Text(1)] = st.Int(2);
  }
  return out;
}

Result<WriterRecord> SqliteStore::RenameWriter(const RunRef& ref, const std::string& from,
                                               const std::string& to) {
  if (to.empty()) return Status::InvalidArgument("writer: label is empty");
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  COHORT_ASSIGN_OR_RETURN(WriterRecord w, LoadWriter(db, run.pk, ref, from));
  if (from == to) return w;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("SELECT 1 FROM writers WHERE run_pk = ? AND label = ?"));
    st.Bind(run.pk).Bind(to);
    COHORT_ASSIGN_OR_RETURN(bool taken, st.Step());
    if (taken) return WriterLabelTaken(ref, to);
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE writers SET label = ? WHERE pk = ?"));
    st.Bind(to).Bind(w.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  COHORT_ASSIGN_OR_RETURN(WriterRecord out, LoadWriter(db, run.pk, ref, to));
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return out;
}

Result<RunFile> SqliteStore::PutRunFile(const RunRef& ref, const RunFile& file) {
  COHORT_RETURN_IF_ERROR(ValidateFileName(file.name));
  const int64_t now = file.updated_ms > 0 ? file.updated_ms : NowMillis();
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO run_files (run_pk, name, content_type, size, updated_ms, "
                            "data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_pk, name) DO "
                            "UPDATE SET content_type = excluded.content_type, size = "
                            "excluded.size, updated_ms = excluded.updated_ms, data = "
                            "excluded.data"));
    st.Bind(run.pk).Bind(file.name).Bind(file.content_type).Bind(int64_t(file.data.size()));
    st.Bind(now).BindBlob(file.data);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE runs SET updated_ms = max(updated_ms, ?) "
                                                "WHERE pk = ?"));
    st.Bind(now).Bind(run.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return StoredRunFile(file, now);
}

Result<std::vector<RunFile>> SqliteStore::ListRunFiles(const RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  static const std::string kSql =
      std::string("SELECT ") + kRunFileColumns + " FROM run_files WHERE run_pk = ? ORDER BY name";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(run.pk);
  std::vector<RunFile> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadRunFileRow(st));
  }
  return out;
}

Result<RunFile> SqliteStore::GetRunFile(const RunRef& ref, const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  static const std::string kSql = std::string("SELECT ") + kRunFileColumns +
                                  ", data FROM run_files WHERE run_pk = ? AND name = ?";
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(run.pk).Bind(name);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return RunFileNotFound(ref, name);
  RunFile f = ReadRunFileRow(st);
  f.data = st.Blob(4);
  return f;
}

}  // namespace cohort::store
