// PostgresStore: the store dump (store.h "dump", store/dump_format.h). Every dump table is the
// PostgreSQL table of the same name. Export reads all tables in one REPEATABLE READ READ ONLY
// transaction (one snapshot) through a cursor, so memory stays bounded; Import inserts with
// ON CONFLICT DO NOTHING, keeping keys, and derives what PostgreSQL keeps besides (the jsonb
// copies of config and summary); FinishImport moves the identity sequences and the runs'
// console numbering past the imported keys.
#include <string>
#include <string_view>

#include "store/dump_format.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

// Rows fetched per cursor round trip (run files may be large: keep it modest).
constexpr int kFetchRows = 200;

bool IsBoolColumn(int table, std::string_view name) {
  return (table == kDumpWriters && (name == "is_primary" || name == "update_finish_state")) ||
         (table == kDumpSeries && name == "is_system") ||
         (table == kDumpApiKeys && name == "revoked");
}

std::string ColumnList(int table) {
  std::string out;
  for (const DumpColumn& c : DumpTables()[table].columns) {
    if (!out.empty()) out += ", ";
    out += '"';
    out += c.name;
    out += '"';
  }
  return out;
}

DumpValue ReadColumn(const PgResult& res, int row, int col, const DumpColumn& c) {
  if (res.IsNull(row, col)) return std::monostate{};
  switch (c.type) {
    case DumpType::kInt:
      return res.Int(row, col);  // booleans read as 0/1
    case DumpType::kDouble:
      return res.Double(row, col);
    case DumpType::kText:
      return res.Text(row, col);  // jsonb (tags) reads as its text
    case DumpType::kBlob:
      return res.Bytes(row, col);
  }
  return std::monostate{};
}

// The INSERT of one table's row ($1.. in dump column order; runs add config_doc/summary_doc).
const std::string& InsertSql(int table) {
  static const std::vector<std::string> kSql = [] {
    std::vector<std::string> out;
    for (int t = 0; t < kDumpTableCount; ++t) {
      const DumpTable& table = DumpTables()[t];
      std::string cols = ColumnList(t);
      std::string vals;
      int n = int(table.columns.size());
      for (int i = 1; i <= n; ++i) vals += (i == 1 ? "$" : ", $") + std::to_string(i);
      if (t == kDumpRuns) {
        cols += ", config_doc, summary_doc";
        vals += ", $" + std::to_string(n + 1) + ", $" + std::to_string(n + 2);
      }
      out.push_back("INSERT INTO " + std::string(table.name) + " (" + cols + ") VALUES (" + vals +
                    ") ON CONFLICT DO NOTHING");
    }
    return out;
  }();
  return kSql[table];
}

Params RowParams(const DumpRecord& rec) {
  const DumpTable& table = DumpTables()[rec.table];
  Params p;
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const DumpColumn& c = table.columns[i];
    const DumpValue& v = rec.values[i];
    if (std::holds_alternative<std::monostate>(v)) {
      p.AddNull(c.type == DumpType::kDouble ? pg::kFloat8Oid
                : c.type == DumpType::kInt  ? pg::kInt8Oid
                : c.type == DumpType::kBlob ? pg::kByteaOid
                                            : pg::kTextOid);
    } else if (const auto* n = std::get_if<int64_t>(&v)) {
      if (IsBoolColumn(rec.table, c.name)) {
        p.Add(*n != 0);
      } else {
        p.Add(*n);
      }
    } else if (const auto* d = std::get_if<double>(&v)) {
      p.Add(*d);
    } else if (c.type == DumpType::kBlob) {
      p.AddBytes(std::get<std::string>(v));
    } else if (rec.table == kDumpRuns && std::string_view(c.name) == "tags") {
      p.AddJsonb(std::get<std::string>(v));
    } else {
      p.Add(std::get<std::string>(v));
    }
  }
  if (rec.table == kDumpRuns) {
    p.AddJsonb(std::get<std::string>(rec.values[10]));  // config
    p.AddJsonb(std::get<std::string>(rec.values[11]));  // summary
  }
  return p;
}

}  // namespace

Status PostgresStore::Export(const std::function<Status(const DumpRecord&)>& sink) {
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Status {
    for (int t = 0; t < kDumpTableCount; ++t) {
      const DumpTable& table = DumpTables()[t];
      COHORT_RETURN_IF_ERROR(c->ExecOnce("DECLARE cohort_dump NO SCROLL CURSOR FOR SELECT " +
                                         ColumnList(t) + " FROM " + table.name + " ORDER BY \"" +
                                         table.columns[0].name + "\"")
                                 .status());
      DumpRecord rec;
      rec.table = t;
      while (true) {
        COHORT_ASSIGN_OR_RETURN(
            PgResult res, c->ExecOnce("FETCH " + std::to_string(kFetchRows) + " FROM cohort_dump"));
        if (res.rows() == 0) break;
        for (int r = 0; r < res.rows(); ++r) {
          rec.values.clear();
          for (size_t i = 0; i < table.columns.size(); ++i) {
            rec.values.push_back(ReadColumn(res, r, int(i), table.columns[i]));
          }
          COHORT_RETURN_IF_ERROR(sink(rec));
        }
      }
      COHORT_RETURN_IF_ERROR(c->ExecOnce("CLOSE cohort_dump").status());
    }
    return Status::Ok();
  });
}

Result<int64_t> PostgresStore::Import(const std::vector<DumpRecord>& records,
                                      const DumpHeader& from) {
  (void)from;  // console ids: SQLite's unique ids are unique per run as well
  for (const DumpRecord& rec : records) COHORT_RETURN_IF_ERROR(ValidateDumpRecord(rec));
  return Write([&](Conn* c) -> Result<int64_t> {
    int64_t stored = 0;
    for (const DumpRecord& rec : records) {
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(InsertSql(rec.table), RowParams(rec)));
      stored += res.affected();
    }
    return stored;
  });
}

Status PostgresStore::FinishImport() {
  return Write([&](Conn* c) -> Status {
    for (const char* t : {"runs", "writers", "series", "views", "api_keys"}) {
      const std::string table = t;
      COHORT_RETURN_IF_ERROR(c->ExecOnce("SELECT setval(pg_get_serial_sequence('" + table +
                                         "', 'pk'), " + "coalesce((SELECT max(pk) FROM " + table +
                                         "), 0) + 1, false)")
                                 .status());
    }
    return c
        ->ExecOnce(
            "UPDATE runs r SET console_next = m.id FROM (SELECT run_pk, max(id) AS id FROM "
            "console GROUP BY run_pk) m WHERE r.pk = m.run_pk AND r.console_next < m.id")
        .status();
  });
}

Result<DumpCounts> PostgresStore::CountRows() {
  return Read(pg::TxnMode::kRead, [&](Conn* c) -> Result<DumpCounts> {
    DumpCounts out;
    for (const DumpTable& t : DumpTables()) {
      COHORT_ASSIGN_OR_RETURN(PgResult res,
                              c->ExecOnce("SELECT count(*) FROM " + std::string(t.name)));
      out[t.name] = res.Int(0, 0);
    }
    return out;
  });
}

}  // namespace cohort::store
