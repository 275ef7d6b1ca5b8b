// SqliteStore: opening, the connections and transactions, and SQLite's own SQL for run-list
// filters (json_extract), console text search (FTS5) and the console index. Ingest and history
// are in sqlite_ingest.cc.
#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "store/sql/sql_tail_seal.h"
#include "store/sqlite/sqlite_chunk_rows.h"
#include "store/sqlite/sqlite_sql_conn.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

// ---- opening and connections ----

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  if (options.path.empty()) return Status::InvalidArgument("sqlite: empty database path");
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Db> writer, store->OpenConnection(/*writer=*/true));
  {
    MutexLock lock(&store->write_mu_);  // uncontended: the store is not shared yet
    store->writer_ = std::move(writer);
    store->series_cache_.Attach(store->writer_.get());
  }
  COHORT_RETURN_IF_ERROR(store->MigrateSchema());
  {
    MutexLock lock(&store->write_mu_);  // the file's own settings, fixed once it has a page
    COHORT_ASSIGN_OR_RETURN(int64_t mode, store->writer_->QueryInt("PRAGMA auto_vacuum"));
    store->incremental_vacuum_ = mode == 2;  // INCREMENTAL
    COHORT_ASSIGN_OR_RETURN(store->page_size_, store->writer_->QueryInt("PRAGMA page_size"));
  }
  if (options.background_checkpoints) {
    MutexLock lock(&store->write_mu_);  // Start configures the write connection
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
    // A new file (no page yet) is made so that free pages can be given back (ReleaseFreeSpace);
    // a file made without it keeps its pages (VACUUM converts). Only then: on a file that has
    // it, the pragma writes page 1 again, a write transaction at every open.
    COHORT_ASSIGN_OR_RETURN(int64_t pages, db->QueryInt("PRAGMA page_count"));
    if (pages == 0) COHORT_RETURN_IF_ERROR(db->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare("PRAGMA journal_mode=WAL"));
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row || st.Text(0) != "wal") {
      return Status::IOError("sqlite: could not switch " + options_.path + " to WAL mode");
    }
    COHORT_RETURN_IF_ERROR(db->Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                              : "PRAGMA synchronous=NORMAL"));
    // Deleting a run deletes what is under it (ON DELETE CASCADE, sql/sql_schema.cc).
    COHORT_RETURN_IF_ERROR(
        db->Exec("PRAGMA cache_size=-32768; PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=ON"));
  } else {
    COHORT_RETURN_IF_ERROR(db->Exec("PRAGMA query_only=1; PRAGMA cache_size=-16384"));
  }
  return db;
}

SqliteStore::ReadLease::~ReadLease() {
  if (db_ == nullptr) return;
  MutexLock lock(&owner_->pool_mu_);
  --owner_->leased_readers_;
  if (int(owner_->idle_readers_.size()) < owner_->options_.read_connections) {
    owner_->idle_readers_.push_back(std::move(db_));
    owner_->reader_returned_.Signal();
  }
}

Result<SqliteStore::ReadLease> SqliteStore::AcquireReader() {
  {
    MutexLock lock(&pool_mu_);
    // All in use: wait a little for one to come back (reads are short) rather than open one
    // more; never long, so that a caller already holding a lease cannot wait for itself.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (idle_readers_.empty() && leased_readers_ >= options_.read_connections) {
      if (!reader_returned_.WaitUntil(pool_mu_, deadline)) break;
    }
    ++leased_readers_;
    if (idle_readers_.empty()) ++readers_opened_;
    if (!idle_readers_.empty()) {
      std::unique_ptr<Db> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReadLease(this, std::move(db));
    }
  }
  // None idle: open another; the surplus is closed when returned.
  Result<std::unique_ptr<Db>> db = OpenConnection(/*writer=*/false);
  if (!db.ok()) {
    MutexLock lock(&pool_mu_);
    --leased_readers_;
    return db.status();
  }
  return ReadLease(this, std::move(db).value());
}

// ---- free pages ----

Result<int64_t> SqliteStore::ReleaseFreeSpace(int64_t max_bytes, bool stopping) {
  int64_t released = 0;
  for (bool first = true;; first = false) {
    // A waiting write gets the mutex between two slices (it is not handed over on unlock: taken
    // again at once, the call would hold it throughout).
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MutexLock lock(&write_mu_);
    if (!incremental_vacuum_) return released;  // a file made without it keeps its pages
    Db* db = writer_.get();
    // Read first, outside a transaction: most calls find nothing to do and take no lock.
    COHORT_ASSIGN_OR_RETURN(int64_t free_pages, db->QueryInt("PRAGMA freelist_count"));
    COHORT_ASSIGN_OR_RETURN(int64_t pages, db->QueryInt("PRAGMA page_count"));
    if ((free_pages >= options_.release_min_free_pages &&
         free_pages * kReleaseMinFreeShare >= pages) ||
        free_pages >= options_.release_many_free_pages) {
      releasing_ = true;
    }
    if (free_pages == 0) releasing_ = false;
    if (!releasing_ && !stopping) return released;
    const int64_t slice =
        std::min({free_pages, kReleaseSlicePages, (max_bytes - released) / page_size_});
    if (slice <= 0) return released;
    // The slice and what it gave back in one write transaction (another process may have
    // written since the reads above; the vacuum frees at most the pages that are free).
    COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
    COHORT_ASSIGN_OR_RETURN(pages, db->QueryInt("PRAGMA page_count"));
    COHORT_RETURN_IF_ERROR(db->Exec("PRAGMA incremental_vacuum(" + std::to_string(slice) + ")"));
    COHORT_ASSIGN_OR_RETURN(int64_t left, db->QueryInt("PRAGMA page_count"));
    COHORT_RETURN_IF_ERROR(txn.Commit());
    if (left >= pages) return released;  // nothing was free any more: never loop on it
    released += (pages - left) * page_size_;
  }
}

Status SqliteStore::Run(Access access, const Work& work) {
  switch (access) {
    case Access::kReadOne:
    case Access::kReadOneAny:
    case Access::kRead:
    case Access::kReadAny: {
      COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
      sqlite::SqlConn conn(lease.get());
      if (access == Access::kReadOne || access == Access::kReadOneAny) return work(conn);
      COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(lease.get(), Txn::Mode::kRead));
      return work(conn);  // ~Txn ends the read transaction
    }
    case Access::kWrite: {
      MutexLock lock(&write_mu_);
      COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(writer_.get(), Txn::Mode::kWrite));
      sqlite::SqlConn conn(writer_.get());
      COHORT_RETURN_IF_ERROR(work(conn));
      return txn.Commit();
    }
    case Access::kWriteShared:
      return group_.Run([&](Db* db) -> Result<bool> {
        sqlite::SqlConn conn(db);
        COHORT_RETURN_IF_ERROR(work(conn));
        return true;
      });
  }
  return Status::Internal("sqlite: unknown access");
}

// ---- run-list filters (json_extract over the JSON text) ----

namespace {

// "$3, $4, ..." for `values`, added to `params`; numbers go both as number and text so that a
// JSON value matches whether it was logged as 1 or "1".
std::string ValueList(const std::vector<FilterValue>& values, bool json, sql::Params* params) {
  std::string out;
  for (const FilterValue& v : values) {
    if (json && v.number) {
      params->Add(*v.number);
      out += (out.empty() ? "" : ", ") + params->Last();
    }
    params->Add(v.text);
    out += (out.empty() ? "" : ", ") + params->Last();
  }
  return out;
}

}  // namespace

std::string SqliteStore::RunTagCondition(const RunPredicate& p, sql::Params* params) const {
  const std::string each = "(SELECT 1 FROM json_each(r.tags) WHERE ";
  switch (p.op) {
    case FilterOp::kIn:
      return "EXISTS " + each + "value IN (" + ValueList(p.values, false, params) + "))";
    case FilterOp::kNotIn:
      return "NOT EXISTS " + each + "value IN (" + ValueList(p.values, false, params) + "))";
    default:
      break;
  }
  params->Add(p.values[0].text);
  switch (p.op) {
    case FilterOp::kEq:
      return "EXISTS " + each + "value = " + params->Last() + ")";
    case FilterOp::kNe:
      return "NOT EXISTS " + each + "value = " + params->Last() + ")";
    default:  // kContains (others are refused by ParseFilter)
      return "EXISTS " + each + "instr(value, " + params->Last() + ") > 0)";
  }
}

namespace {

// The JSON path of config.<key> / summary.<key> in `doc`, as an SQL expression: a key that
// holds the dotted name itself ({"optim.lr": 0.1}, as the web UI reads it) before the nested
// path ({"optim": {"lr": 0.1}}).
std::string KeyPathExpr(const std::string& doc, const std::vector<std::string>& path,
                        sql::Params* params) {
  params->Add(JsonPath(path));
  if (path.size() < 2) return params->Last();
  const std::string nested = params->Last();
  std::string flat;
  for (const std::string& seg : path) flat += (flat.empty() ? "" : ".") + seg;
  params->Add(JsonPath({flat}));
  return "(CASE WHEN json_type(" + doc + ", " + params->Last() + ") IS NOT NULL THEN " +
         params->Last() + " ELSE " + nested + " END)";
}

}  // namespace

// The sort key of a config./summary. sort (run_list_sql.h RunJsonSortExprs) with json_type and
// json_extract. The strings "Infinity"/"-Infinity" are infinities and "NaN" its own class, as
// the API writes non-finite numbers (run_filter.h JsonSortClass).
RunJsonSortExprs SqliteStore::JsonSortExprs(RunSortField field,
                                            const std::vector<std::string>& path,
                                            sql::Params* params) const {
  RunJsonSortExprs e;
  const std::string doc = field == RunSortField::kConfig ? "r.config" : "r.summary";
  const std::string at = KeyPathExpr(doc, path, params);
  const std::string t = "json_type(" + doc + ", " + at + ")";
  const std::string v = "json_extract(" + doc + ", " + at + ")";
  // Simple CASEs: each reads the value at most twice (json_type, then json_extract).
  e.cls = "(CASE " + t + " WHEN 'integer' THEN 0 WHEN 'real' THEN 0 WHEN 'true' THEN 0 " +
          "WHEN 'false' THEN 0 WHEN 'text' THEN (CASE " + v +
          " WHEN 'Infinity' THEN 0 WHEN '-Infinity' THEN 0 WHEN 'NaN' THEN 1 ELSE 2 END) " +
          "ELSE 3 END)";
  e.number = "(CASE " + t + " WHEN 'integer' THEN CAST(" + v + " AS REAL) WHEN 'real' THEN " + v +
             " WHEN 'true' THEN 1.0 WHEN 'text' THEN (CASE " + v +
             " WHEN 'Infinity' THEN 9e999 WHEN '-Infinity' THEN -9e999 ELSE 0.0 END) " +
             "ELSE 0.0 END)";
  e.text = "(CASE " + t + " WHEN 'text' THEN (CASE " + v +
           " WHEN 'Infinity' THEN '' WHEN '-Infinity' THEN '' WHEN 'NaN' THEN '' ELSE " + v +
           " END) ELSE '' END)";
  return e;
}

// config.<key> / summary.<key>: compares the extracted JSON value. Runs without the key match
// != and not in, and nothing else.
std::string SqliteStore::RunJsonCondition(const RunPredicate& p, sql::Params* params) const {
  const std::string doc = p.field == FilterField::kConfig ? "r.config" : "r.summary";
  const std::string v = "json_extract(" + doc + ", " + KeyPathExpr(doc, p.path, params) + ")";
  switch (p.op) {
    case FilterOp::kEq:
    case FilterOp::kIn:
      return "coalesce(" + v + " IN (" + ValueList(p.values, true, params) + "), 0)";
    case FilterOp::kNe:
    case FilterOp::kNotIn:
      return "NOT coalesce(" + v + " IN (" + ValueList(p.values, true, params) + "), 0)";
    case FilterOp::kContains:
      params->Add(p.values[0].text);
      return "instr(CAST(" + v + " AS TEXT), " + params->Last() + ") > 0";
    case FilterOp::kLt:
    case FilterOp::kGt: {
      const char* cmp = p.op == FilterOp::kLt ? " < " : " > ";
      const FilterValue& value = p.values[0];
      if (value.number) {
        params->Add(*value.number);
        return "(typeof(" + v + ") IN ('integer', 'real') AND " + v + cmp + params->Last() + ")";
      }
      params->Add(value.text);
      return "(typeof(" + v + ") = 'text' AND " + v + cmp + params->Last() + ")";
    }
  }
  return "false";
}

// ---- console ----

namespace {

// Console text search: patterns of at least kMinFtsChars characters are looked up in the FTS5
// trigram index (console_fts) and rechecked with instr(); shorter ones, which a trigram index
// cannot answer, scan with instr() alone.
constexpr int kMinFtsChars = 3;

bool UsesFts(const std::string& text) {
  int chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return chars >= kMinFtsChars;
}

// `text` as one FTS5 string (a phrase): quoted, inner quotes doubled.
std::string FtsPhrase(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

std::string SqliteStore::ConsoleTextCondition(const std::string& text, sql::Params* params) const {
  params->Add(text);
  const std::string substring = "instr(c.text, " + params->Last() + ") > 0";
  if (!UsesFts(text)) return substring;
  params->Add(FtsPhrase(text));
  return "c.id IN (SELECT rowid FROM console_fts WHERE console_fts MATCH " + params->Last() +
         ") AND " + substring;
}

Result<ConsoleIndex> SqliteStore::IndexConsole(const ConsoleQuery& q, int64_t stride) {
  if (stride < 1) return Status::InvalidArgument("console index: stride must be >= 1");
  return RunFor<ConsoleIndex>(Access::kRead, [&](sql::Conn& conn) -> Result<ConsoleIndex> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
    // Only ids are read: without a text filter the row's text is never decoded. Without a
    // filter the scan stays in the (run_pk, id) index; a label filter reads (run_pk, writer_pk,
    // id) (the planner would walk the run's lines in id order and read every row for its
    // writer), a stream filter (run_pk, stream, id); the ids of several writers are sorted.
    std::string sql = "SELECT c.id FROM console c";
    if (!q.labels.empty()) {
      sql += " INDEXED BY console_by_writer";
    } else if (!q.stream.empty()) {
      sql += " INDEXED BY console_by_stream";
    }
    sql::Params params;
    sql += ConsoleFilter(q, run.pk, &params) + " ORDER BY c.id";
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                            conn.Query(sql, params, sql::Prepare::kOnce));
    ConsoleIndex out;
    out.last_id = q.after_id;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) return out;
      out.last_id = rows->Int(0);
      if (++out.total % stride == 0) out.stride_ids.push_back(out.last_id);
    }
  });
}

// ---- import ----

Status SqliteStore::AfterImport(sql::Conn& conn) {
  // Rowids continue after the highest one stored; nothing to move. Summary pages are not in
  // dumps: build them for the sealed chunks of the imported series (those not paged yet).
  return sqlite::PageImportedChunks(static_cast<sqlite::SqlConn&>(conn).db());
}

// ---- finished writers ----

Result<int64_t> SqliteStore::AfterWriterFinished(sql::Conn& conn, int64_t writer_pk) {
  // A finished writer's series keep no small tail chunks (series::PlanTailSeal); the sealed
  // chunks continue the summary pages.
  sqlite::Db* db = static_cast<sqlite::SqlConn&>(conn).db();
  const auto page = [db](sql::Conn&, int64_t series_pk, int64_t tail_idx_before,
                         const series::TailState& after,
                         const std::vector<series::ChunkWrite>& sealed) {
    return sqlite::PageSealedTail(db, series_pk, tail_idx_before, after, sealed);
  };
  return sql::SealWriterTails(conn, writer_pk, page);
}

}  // namespace cohort::store
