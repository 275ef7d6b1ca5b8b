// SqlStore: batch retention and the store dump (store.h "dump", store/dump_format.h). Every dump
// table is the table of the same name in both engines' schemas (sql_schema.cc); booleans travel
// as 0/1, JSON columns as their text, doubles bit for bit. Export reads all tables in one read
// transaction (one snapshot), streaming (Conn::Scan); Import inserts with ON CONFLICT DO NOTHING,
// keeping keys (the alert delivery cursor, the one row a fresh store has, moves up instead).
#include <string>
#include <string_view>

#include "store/dump_format.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

// Batch records pruned per write transaction at most, so that ingest waits for one slice.
constexpr int64_t kPruneSlice = 10000;

bool IsBoolColumn(int table, std::string_view name) {
  return (table == kDumpWriters && (name == "is_primary" || name == "update_finish_state")) ||
         (table == kDumpSeries && name == "is_system") ||
         (table == kDumpApiKeys && name == "revoked") ||
         (table == kDumpAlertRules && (name == "enabled" || name == "builtin")) ||
         (table == kDumpAlertWebhooks && name == "enabled");
}

// The rows of a table that a dump carries (and CountRows counts): all but the delivery cursor's
// initial row, which every store has from its schema (a fresh store counts as empty).
std::string DumpedRows(int table) {
  const std::string from = " FROM " + std::string(DumpTables()[table].name);
  return table == kDumpAlertDeliveryCursor ? from + " WHERE last_event_id > 0" : from;
}

bool IsJsonColumn(int table, std::string_view name) { return table == kDumpRuns && name == "tags"; }

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

DumpValue ReadColumn(const Row& row, int col, const DumpColumn& c) {
  switch (c.type) {
    case DumpType::kInt:
      if (row.IsNull(col)) return std::monostate{};
      return row.Int(col);
    case DumpType::kDouble:
      return row.Double(col);  // SQLite keeps NaN summaries as NULL: NaN
    case DumpType::kText:
      if (row.IsNull(col)) return std::monostate{};
      return row.Text(col);
    case DumpType::kBlob:
      return std::string(row.Bytes(col));
  }
  return std::monostate{};
}

sql::Type NullType(const DumpColumn& c) {
  switch (c.type) {
    case DumpType::kInt:
      return sql::Type::kInt;
    case DumpType::kDouble:
      return sql::Type::kStored;
    case DumpType::kText:
      return sql::Type::kText;
    case DumpType::kBlob:
      return sql::Type::kBlob;
  }
  return sql::Type::kText;
}

// The INSERT of one table's row, $1.. in dump column order.
const std::string& InsertSql(int table) {
  static const std::vector<std::string> kSql = [] {
    std::vector<std::string> out;
    for (int t = 0; t < kDumpTableCount; ++t) {
      const DumpTable& table = DumpTables()[t];
      std::string values;
      for (size_t i = 1; i <= table.columns.size(); ++i) {
        values += (i == 1 ? "$" : ", $") + std::to_string(i);
      }
      std::string sql = "INSERT INTO " + std::string(table.name) + " (" + ColumnList(t) +
                        ") VALUES (" + values + ") ";
      if (t == kDumpAlertDeliveryCursor) {
        // The target has the row: move it up to the source's (events up to it were fanned out
        // to the webhooks there), never back; unchanged counts as not stored.
        sql += "ON CONFLICT (id) DO UPDATE SET last_event_id = excluded.last_event_id WHERE "
               "alert_delivery_cursor.last_event_id < excluded.last_event_id";
      } else {
        sql += "ON CONFLICT DO NOTHING";
      }
      out.push_back(std::move(sql));
    }
    return out;
  }();
  return kSql[table];
}

}  // namespace

Result<int64_t> SqlStore::PruneBatches(int64_t stored_before_ms) {
  int64_t removed = 0;
  for (bool last = false; !last;) {
    int64_t slice = 0;  // set by the attempt that commits
    COHORT_RETURN_IF_ERROR(Run(Access::kWrite, [&](Conn& conn) -> Status {
      COHORT_ASSIGN_OR_RETURN(
          std::optional<int64_t> oldest,
          sql::QueryOne<std::optional<int64_t>>(
              conn, "SELECT min(stored_ms) FROM batches WHERE stored_ms < $1",
              Params().Add(stored_before_ms), [](const Row& row) { return row.OptInt(0); },
              Status::Internal("prune: no aggregate row")));
      last = true;
      if (!oldest) return Status::Ok();
      // This slice: the records stored before the (kPruneSlice + 1)-th oldest one, all of those
      // stored in its first millisecond at least.
      COHORT_ASSIGN_OR_RETURN(
          std::vector<int64_t> next,
          sql::QueryAll<int64_t>(conn,
                                 "SELECT stored_ms FROM batches WHERE stored_ms < $1 "
                                 "ORDER BY stored_ms LIMIT 1 OFFSET $2",
                                 Params().Add(stored_before_ms).Add(kPruneSlice),
                                 [](const Row& row) { return row.Int(0); }));
      int64_t cutoff = stored_before_ms;
      if (!next.empty()) {
        cutoff = std::max(next[0], *oldest + 1);
        last = cutoff >= stored_before_ms;
        cutoff = std::min(cutoff, stored_before_ms);
      }
      // The writers' watermarks rise first (under their row locks, which ingest takes too: a
      // batch racing with the pruning sees either its record or the raised watermark); then only
      // the records at or below them go.
      COHORT_RETURN_IF_ERROR(
          conn.Exec("UPDATE writers SET pruned_seq = greatest(pruned_seq, (SELECT max(seq) FROM "
                    "batches b WHERE b.writer_pk = writers.pk AND b.stored_ms < $1)) "
                    "WHERE pk IN (SELECT writer_pk FROM batches WHERE stored_ms < $1)",
                    Params().Add(cutoff))
              .status());
      COHORT_ASSIGN_OR_RETURN(
          slice, conn.Exec("DELETE FROM batches WHERE stored_ms < $1 AND seq <= (SELECT "
                           "pruned_seq FROM writers w WHERE w.pk = batches.writer_pk)",
                           Params().Add(cutoff)));
      return Status::Ok();
    }));
    removed += slice;
  }
  return removed;
}

Status SqlStore::Export(const std::function<Status(const DumpRecord&)>& sink) {
  return Run(Access::kRead, [&](Conn& conn) -> Status {
    const auto& tables = DumpTables();
    for (int t = 0; t < kDumpTableCount; ++t) {
      const DumpTable& table = tables[t];
      DumpRecord rec;
      rec.table = t;
      COHORT_RETURN_IF_ERROR(conn.Scan("SELECT " + ColumnList(t) + DumpedRows(t) +
                                           " ORDER BY \"" + table.columns[0].name + "\"",
                                       [&](const Row& row) -> Status {
                                         rec.values.clear();
                                         for (size_t i = 0; i < table.columns.size(); ++i) {
                                           rec.values.push_back(
                                               ReadColumn(row, int(i), table.columns[i]));
                                         }
                                         return sink(rec);
                                       }));
    }
    return Status::Ok();
  });
}

Result<int64_t> SqlStore::Import(const std::vector<DumpRecord>& records, const DumpHeader& from) {
  for (const DumpRecord& rec : records) COHORT_RETURN_IF_ERROR(ValidateDumpRecord(rec));
  // PostgreSQL numbers console lines per run, SQLite's ids are unique in the store: into SQLite,
  // (run, id) -> run << 32 | id keeps each run's order and is the same on every import.
  const bool renumber_console = ConsoleIdsPerRun(from) && engine() == sql::Engine::kSqlite;
  Result<int64_t> imported = RunFor<int64_t>(Access::kWrite, [&](Conn& conn) -> Result<int64_t> {
    int64_t stored = 0;
    for (const DumpRecord& rec : records) {
      const DumpTable& table = DumpTables()[rec.table];
      Params p;
      for (size_t i = 0; i < table.columns.size(); ++i) {
        const DumpColumn& c = table.columns[i];
        const DumpValue& v = rec.values[i];
        if (rec.table == kDumpConsole && i == 0 && renumber_console) {
          const int64_t run_pk = std::get<int64_t>(rec.values[1]);
          const int64_t id = std::get<int64_t>(v);
          if (run_pk >= (int64_t{1} << 31) || id < 0 || id >= (int64_t{1} << 32)) {
            return Status::InvalidArgument("import: console id out of range for sqlite");
          }
          p.Add((run_pk << 32) | id);
        } else if (std::holds_alternative<std::monostate>(v)) {
          p.AddNull(NullType(c));
        } else if (const auto* n = std::get_if<int64_t>(&v)) {
          if (IsBoolColumn(rec.table, c.name)) {
            p.Add(*n != 0);
          } else {
            p.Add(*n);
          }
        } else if (const auto* d = std::get_if<double>(&v)) {
          p.AddStored(*d);
        } else if (c.type == DumpType::kBlob) {
          p.AddBlob(std::get<std::string>(v));
        } else if (IsJsonColumn(rec.table, c.name)) {
          p.AddJson(std::get<std::string>(v));
        } else {
          p.Add(std::get<std::string>(v));
        }
      }
      COHORT_ASSIGN_OR_RETURN(int64_t n, conn.Exec(InsertSql(rec.table), p));
      stored += n;
    }
    return stored;
  });
  run_cache_.Clear();  // the keys of the runs it knew may have changed
  return imported;
}

Status SqlStore::FinishImport() {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    // The runs' media bytes are derived (not dumped): counted again from the imported rows.
    COHORT_RETURN_IF_ERROR(
        conn.Exec("UPDATE runs SET media_bytes = coalesce((SELECT CAST(sum(m.size + "
                  "m.cell_bytes) AS BIGINT) FROM media m WHERE m.run_pk = runs.pk), 0)",
                  Params())
            .status());
    return AfterImport(conn);
  });
}

Result<DumpCounts> SqlStore::CountRows() {
  return RunFor<DumpCounts>(Access::kRead, [&](Conn& conn) -> Result<DumpCounts> {
    DumpCounts out;
    for (int t = 0; t < kDumpTableCount; ++t) {
      COHORT_ASSIGN_OR_RETURN(out[DumpTables()[t].name],
                              sql::QueryInt(conn, "SELECT count(*)" + DumpedRows(t)));
    }
    return out;
  });
}

}  // namespace cohort::store
