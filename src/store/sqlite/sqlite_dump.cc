// SqliteStore: the store dump (store.h "dump", store/dump_format.h). Every dump table is the
// SQLite table of the same name; the console's `id` is its rowid `pk`. Export reads all tables
// in one read transaction (one snapshot); Import inserts with INSERT OR IGNORE, keeping keys.
#include <string>

#include "store/dump_format.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

// The SQLite column of a dump column.
const char* SqliteColumn(int table, const DumpColumn& c) {
  if (table == kDumpConsole && std::string_view(c.name) == "id") return "pk";
  return c.name;
}

std::string ColumnList(int table) {
  std::string out;
  for (const DumpColumn& c : DumpTables()[table].columns) {
    if (!out.empty()) out += ", ";
    out += '"';
    out += SqliteColumn(table, c);
    out += '"';
  }
  return out;
}

DumpValue ReadColumn(const Stmt& st, int col, const DumpColumn& c) {
  switch (c.type) {
    case DumpType::kInt:
      if (st.IsNull(col)) return std::monostate{};
      return st.Int(col);
    case DumpType::kDouble:
      return st.Double(col);  // NULL (a NaN summary) reads back as NaN
    case DumpType::kText:
      return st.Text(col);
    case DumpType::kBlob:
      return st.Blob(col);
  }
  return std::monostate{};
}

void BindColumn(Stmt& st, const DumpValue& v, const DumpColumn& c) {
  if (std::holds_alternative<std::monostate>(v)) {
    st.BindNull();
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    st.Bind(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    st.BindKeepingSign(*d);  // NaN binds NULL, as the store keeps NaN summaries
  } else if (c.type == DumpType::kBlob) {
    st.BindBlob(std::get<std::string>(v));
  } else {
    st.Bind(std::get<std::string>(v));
  }
}

}  // namespace

Status SqliteStore::Export(const std::function<Status(const DumpRecord&)>& sink) {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  const auto& tables = DumpTables();
  for (int t = 0; t < kDumpTableCount; ++t) {
    const DumpTable& table = tables[t];
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Prepare("SELECT " + ColumnList(t) + " FROM " + table.name + " ORDER BY " +
                             "\"" + SqliteColumn(t, table.columns[0]) + "\""));
    DumpRecord rec;
    rec.table = t;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      rec.values.clear();
      for (size_t i = 0; i < table.columns.size(); ++i) {
        rec.values.push_back(ReadColumn(st, int(i), table.columns[i]));
      }
      COHORT_RETURN_IF_ERROR(sink(rec));
    }
  }
  return Status::Ok();
}

Result<int64_t> SqliteStore::Import(const std::vector<DumpRecord>& records,
                                    const DumpHeader& from) {
  for (const DumpRecord& rec : records) COHORT_RETURN_IF_ERROR(ValidateDumpRecord(rec));
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  int64_t stored = 0;
  for (const DumpRecord& rec : records) {
    const DumpTable& table = DumpTables()[rec.table];
    std::string sql = "INSERT OR IGNORE INTO " + std::string(table.name) + " (" +
                      ColumnList(rec.table) + ") VALUES (";
    for (size_t i = 0; i < table.columns.size(); ++i) sql += i == 0 ? "?" : ", ?";
    sql += ")";
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(sql));
    for (size_t i = 0; i < table.columns.size(); ++i) {
      if (rec.table == kDumpConsole && i == 0 && ConsoleIdsPerRun(from)) {
        // PostgreSQL numbers console lines per run; here the rowid is unique in the store.
        // (run, id) -> run << 32 | id keeps each run's order and is the same on every import.
        const int64_t run_pk = std::get<int64_t>(rec.values[1]);
        const int64_t id = std::get<int64_t>(rec.values[0]);
        if (run_pk >= (int64_t{1} << 31) || id < 0 || id >= (int64_t{1} << 32)) {
          return Status::InvalidArgument("import: console id out of range for sqlite");
        }
        st.Bind((run_pk << 32) | id);
        continue;
      }
      BindColumn(st, rec.values[i], table.columns[i]);
    }
    COHORT_RETURN_IF_ERROR(st.Run());
    stored += db->Changes();
  }
  COHORT_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

Status SqliteStore::FinishImport() {
  // Rowids continue after the highest one stored; nothing to move. Summary pages are not in
  // dumps: build them for the sealed chunks of the imported series (those not paged yet).
  std::lock_guard<std::mutex> lock(write_mu_);
  Db* db = writer_.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
  COHORT_RETURN_IF_ERROR(sqlite::PageExistingChunks(db));
  return txn.Commit();
}

Result<DumpCounts> SqliteStore::CountRows() {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  DumpCounts out;
  for (const DumpTable& t : DumpTables()) {
    COHORT_ASSIGN_OR_RETURN(int64_t n, db->QueryInt("SELECT count(*) FROM " + std::string(t.name)));
    out[t.name] = n;
  }
  return out;
}

}  // namespace cohort::store
