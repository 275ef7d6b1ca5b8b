// PostgresStore: opening, the transaction runner, and PostgreSQL's own SQL for run-list filters
// (jsonb), console text search (LIKE, pg_trgm), the console index (numbered on the server) and
// what an import leaves to redo. Ingest is in pg_ingest.cc, history in pg_history.cc.
#include "store/postgres/pg_store.h"

#include <algorithm>
#include <chrono>

#include "store/postgres/pg_sql_conn.h"
#include "store/sql/sql_tail_seal.h"

namespace cohort::store {

using pg::Conn;

// ---- opening and transactions ----

PostgresStore::PostgresStore(const pg::PostgresOptions& options)
    : SqlStore(sql::Engine::kPostgres),
      primary_(
          std::make_unique<pg::Pool>(options.conninfo, options.pool_size, options.pool_timeout)),
      ingest_cache_enabled_(options.ingest_cache) {
  if (!options.read_conninfo.empty()) {
    reads_ = std::make_unique<pg::Pool>(options.read_conninfo, options.read_pool_size,
                                        options.pool_timeout);
  }
  if (options.group_commit > 0) {
    group_commit_ = std::make_unique<pg::GroupCommit>(primary_.get(), options.group_commit);
  }
  vacuum_thread_ = std::thread([this] { VacuumTails(); });
}

PostgresStore::~PostgresStore() {
  {
    MutexLock lock(&vacuum_mu_);
    closing_ = true;
  }
  vacuum_cv_.SignalAll();
  vacuum_thread_.join();
}

void PostgresStore::TailRowsDeleted(int64_t rows) {
  if (rows <= 0) return;
  bool wake = false;
  {
    MutexLock lock(&vacuum_mu_);
    const int64_t before = tails_deleted_;
    tails_deleted_ += rows;
    wake = before < sql::kTailVacuumRows && tails_deleted_ >= sql::kTailVacuumRows;
  }
  if (wake) vacuum_cv_.Signal();
}

void PostgresStore::VacuumTails() {
  MutexLock lock(&vacuum_mu_);
  while (true) {
    while (!closing_ && tails_deleted_ < sql::kTailVacuumRows) vacuum_cv_.Wait(vacuum_mu_);
    if (closing_) return;
    tails_deleted_ = 0;
    lock.Unlock();
    // Outside a transaction, on a connection of the pool. A failure (the database away, a role
    // that does not own the table: a warning, nothing done) leaves it to autovacuum.
    const auto start = std::chrono::steady_clock::now();
    {
      Result<pg::Pool::Lease> lease = primary_->Acquire();
      if (lease.ok() && (*lease)->ExecOnce("VACUUM chunks_tail").ok()) {
        tail_vacuums_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    const auto end = std::chrono::steady_clock::now();
    lock.Lock();
    // The next one after a pause of ten times this one's duration (at least 100 ms): a small
    // table is vacuumed as often as its deletes ask, a large one (thousands of series' tails)
    // costs at most a tenth of one PostgreSQL backend.
    const auto next = end + std::max<std::chrono::steady_clock::duration>(
                                std::chrono::milliseconds(100), 10 * (end - start));
    while (!closing_ && vacuum_cv_.WaitUntil(vacuum_mu_, next)) {
    }
  }
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const pg::PostgresOptions& options) {
  std::unique_ptr<PostgresStore> store(new PostgresStore(options));
  {
    Result<pg::Pool::Lease> lease = store->primary_->Acquire();
    if (!lease.ok()) {
      return Status(lease.status().code(),
                    lease.status().message() + " (" + pg::DescribeConnInfo(options.conninfo) + ")");
    }
  }
  if (!options.create_schema) {
    COHORT_RETURN_IF_ERROR(store->RequireSchema(pg::DescribeConnInfo(options.conninfo)));
  }
  COHORT_RETURN_IF_ERROR(store->MigrateSchema());
  return store;
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::OpenUrl(const std::string& url) {
  COHORT_ASSIGN_OR_RETURN(pg::PostgresOptions options, pg::ParsePostgresUrl(url));
  return Open(options);
}

Status PostgresStore::Run(Access access, const Work& work) {
  pg::Pool* pool = primary_.get();
  pg::TxnMode mode = pg::TxnMode::kWrite;
  switch (access) {
    case Access::kReadOne:
      mode = pg::TxnMode::kAutocommit;
      break;
    case Access::kReadOneAny:
      pool = read_pool();
      mode = pg::TxnMode::kAutocommit;
      break;
    case Access::kRead:
      mode = pg::TxnMode::kRead;
      break;
    case Access::kReadAny:
      pool = read_pool();
      mode = pg::TxnMode::kRead;
      break;
    case Access::kWrite:
    case Access::kWriteShared:
      break;
  }
  return pg::RunTransaction(pool, mode, [&](Conn* c) -> Status {
    pg::SqlConn conn(c);
    return work(conn);
  });
}

// ---- run-list filters (jsonb copies of config and summary) ----

namespace {

std::vector<std::string> Texts(const std::vector<FilterValue>& values) {
  std::vector<std::string> out;
  for (const FilterValue& v : values) out.push_back(v.text);
  return out;
}

std::vector<double> Numbers(const std::vector<FilterValue>& values) {
  std::vector<double> out;
  for (const FilterValue& v : values) {
    if (v.number) out.push_back(*v.number);
  }
  return out;
}

}  // namespace

// tags is a jsonb array of strings: `?` tests for an element, `?|` for any of several.
std::string PostgresStore::RunTagCondition(const RunPredicate& p, sql::Params* params) const {
  switch (p.op) {
    case FilterOp::kEq:
      params->Add(p.values[0].text);
      return "r.tags ? " + params->Last();
    case FilterOp::kNe:
      params->Add(p.values[0].text);
      return "NOT (r.tags ? " + params->Last() + ")";
    case FilterOp::kContains:
      params->Add(p.values[0].text);
      return "EXISTS (SELECT 1 FROM jsonb_array_elements_text(r.tags) t(v) WHERE strpos(t.v, " +
             params->Last() + ") > 0)";
    case FilterOp::kIn:
      params->AddTextArray(Texts(p.values));
      return "r.tags ?| " + params->Last();
    case FilterOp::kNotIn:
      params->AddTextArray(Texts(p.values));
      return "NOT (r.tags ?| " + params->Last() + ")";
    default:
      return "false";  // refused by ParseFilter
  }
}

namespace {

// The path of config.<key> / summary.<key> in `doc`, as an SQL text[] expression: a key that
// holds the dotted name itself ({"optim.lr": 0.1}, as the web UI reads it) before the nested
// path ({"optim": {"lr": 0.1}}).
std::string KeyPathExpr(const std::string& doc, const std::vector<std::string>& path,
                        sql::Params* params) {
  params->AddTextArray(path);
  if (path.size() < 2) return params->Last();
  const std::string nested = params->Last();
  std::string flat;
  for (const std::string& seg : path) flat += (flat.empty() ? "" : ".") + seg;
  params->AddTextArray({flat});
  return "(CASE WHEN (" + doc + " #> " + params->Last() + ") IS NOT NULL THEN " + params->Last() +
         " ELSE " + nested + " END)";
}

}  // namespace

// The sort key of a config./summary. sort (run_list_sql.h RunJsonSortExprs) from the jsonb copy,
// in SQLite's order (SqliteStore::JsonSortExprs): texts compare byte-wise (COLLATE "C").
RunJsonSortExprs PostgresStore::JsonSortExprs(RunSortField field,
                                              const std::vector<std::string>& path,
                                              sql::Params* params) const {
  RunJsonSortExprs e;
  const std::string doc = field == RunSortField::kConfig ? "r.config_doc" : "r.summary_doc";
  const std::string v = "(" + doc + " #> " + KeyPathExpr(doc, path, params) + ")";
  const std::string t = "jsonb_typeof(" + v + ")";
  const std::string s = "(" + v + " #>> '{}')";
  e.cls = "(CASE WHEN " + t + " IN ('number', 'boolean') OR (" + t + " = 'string' AND " + s +
          " IN ('Infinity', '-Infinity')) THEN 0 WHEN " + t + " = 'string' AND " + s +
          " = 'NaN' THEN 1 WHEN " + t + " = 'string' THEN 2 ELSE 3 END)";
  e.number = "(CASE WHEN " + t + " IN ('number', 'boolean') THEN cohort_json_num(" + v + ") WHEN " +
             t + " = 'string' AND " + s + " = 'Infinity' THEN 'Infinity'::float8 " + "WHEN " + t +
             " = 'string' AND " + s + " = '-Infinity' THEN '-Infinity'::float8 ELSE 0::float8 END)";
  e.text = "(CASE WHEN " + t + " = 'string' AND " + s +
           " NOT IN ('Infinity', '-Infinity', 'NaN') THEN " + s + " ELSE '' END COLLATE \"C\")";
  return e;
}

// config.<key> / summary.<key>, with the cohort_json_* functions of the schema: values compare
// the way SQLite's json_extract does. Runs without the key match != and not in, and nothing else.
std::string PostgresStore::RunJsonCondition(const RunPredicate& p, sql::Params* params) const {
  const std::string doc = p.field == FilterField::kConfig ? "r.config_doc" : "r.summary_doc";
  const std::string v = "(" + doc + " #> " + KeyPathExpr(doc, p.path, params) + ")";
  auto match_any = [&] {
    // Numbers compare as numbers, every operand also as text (a value logged as "1" or 1).
    params->AddArray(Numbers(p.values));
    const std::string numbers = params->Last();
    params->AddTextArray(Texts(p.values));
    return "coalesce(cohort_json_num(" + v + ") = ANY(" + numbers + ") OR cohort_json_str(" + v +
           ") = ANY(" + params->Last() + "), false)";
  };
  switch (p.op) {
    case FilterOp::kEq:
    case FilterOp::kIn:
      return match_any();
    case FilterOp::kNe:
    case FilterOp::kNotIn:
      return "NOT " + match_any();
    case FilterOp::kContains:
      params->Add(p.values[0].text);
      return "strpos(cohort_json_cast_text(" + v + "), " + params->Last() + ") > 0";
    case FilterOp::kLt:
    case FilterOp::kGt: {
      const char* cmp = p.op == FilterOp::kLt ? " < " : " > ";
      const FilterValue& value = p.values[0];
      if (value.number) {
        params->Add(*value.number);
        return "cohort_json_num(" + v + ")" + cmp + params->Last();
      }
      params->Add(value.text);
      return "(jsonb_typeof(" + v + ") = 'string' AND (" + v + " #>> '{}') COLLATE \"C\"" + cmp +
             params->Last() + ")";
    }
  }
  return "false";
}

// ---- console ----

// Console text search is a LIKE '%text%' (wildcards in the text escaped), which the trigram index
// console_text_trgm answers where pg_trgm is installed and a scan otherwise.
std::string PostgresStore::ConsoleTextCondition(const std::string& text,
                                                sql::Params* params) const {
  std::string pattern = "%";
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') pattern += '\\';
    pattern += ch;
  }
  pattern += '%';
  params->Add(pattern);
  return "c.text LIKE " + params->Last() + " ESCAPE '\\'";
}

Result<ConsoleIndex> PostgresStore::IndexConsole(const ConsoleQuery& q, int64_t stride) {
  if (stride < 1) return Status::InvalidArgument("console index: stride must be >= 1");
  return RunFor<ConsoleIndex>(Access::kReadAny, [&](sql::Conn& conn) -> Result<ConsoleIndex> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
    // Numbered on the server: only every stride-th id and the last one (with the count) travel.
    sql::Params params;
    std::string sql =
        "SELECT id, rn, total FROM (SELECT c.id, row_number() OVER (ORDER BY c.id) AS rn, "
        "count(*) OVER () AS total FROM console c" +
        ConsoleFilter(q, run.pk, &params);
    params.Add(stride);
    sql += ") s WHERE rn % " + params.Last() + " = 0 OR rn = total ORDER BY id";
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                            conn.Query(sql, params, sql::Prepare::kOnce));
    ConsoleIndex out;
    out.last_id = q.after_id;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) return out;
      const int64_t id = rows->Int(0), rn = rows->Int(1);
      out.total = rows->Int(2);
      if (rn % stride == 0) out.stride_ids.push_back(id);
      if (rn == out.total) out.last_id = id;
    }
  });
}

// ---- import ----

Status PostgresStore::AfterImport(sql::Conn& conn) {
  // Identity sequences past the imported keys; each run's console numbering past its lines.
  for (const char* table : {"runs", "writers", "series", "views", "api_keys",
                            "artifact_collections", "artifact_versions"}) {
    const std::string t = table;
    COHORT_RETURN_IF_ERROR(conn.Exec("SELECT setval(pg_get_serial_sequence('" + t +
                                         "', 'pk'), coalesce((SELECT max(pk) FROM " + t +
                                         "), 0) + 1, false)",
                                     sql::Params(), sql::Prepare::kOnce)
                               .status());
  }
  // The alert tables' ids likewise; alert events past the delivery cursor too (a new event
  // numbered at or below it would never be sent to the webhooks).
  for (const char* table : {"alert_rules", "alerts", "alert_events", "alert_webhooks",
                            "alert_deliveries"}) {
    const std::string t = table;
    const std::string floor =
        t == "alert_events" ? "(SELECT last_event_id FROM alert_delivery_cursor WHERE id = 1)"
                            : "0";
    COHORT_RETURN_IF_ERROR(conn.Exec("SELECT setval(pg_get_serial_sequence('" + t +
                                         "', 'id'), greatest(coalesce((SELECT max(id) FROM " + t +
                                         "), 0), coalesce(" + floor + ", 0)) + 1, false)",
                                     sql::Params(), sql::Prepare::kOnce)
                               .status());
  }
  return conn
      .Exec(
          "UPDATE runs r SET console_next = m.id FROM (SELECT run_pk, max(id) AS id FROM "
          "console GROUP BY run_pk) m WHERE r.pk = m.run_pk AND r.console_next < m.id",
          sql::Params(), sql::Prepare::kOnce)
      .status();
}

// ---- finished writers ----

Result<int64_t> PostgresStore::AfterWriterFinished(sql::Conn& conn, int64_t writer_pk) {
  // A finished writer's series keep no small tail chunks (series::PlanTailSeal), as on SQLite.
  // The ingest cache forgets the writer: its tail states change here (a batch planned from the
  // old ones would find them stale and be planned again; forgetting saves that round trip).
  ingest_cache_.EraseWriter(writer_pk);
  // The deleted rows count towards the VACUUM of chunks_tail once committed (TailRowsCommitted).
  return sql::SealWriterTails(conn, writer_pk, nullptr);
}

}  // namespace cohort::store
