// Internal to the PostgreSQL store: the shared column lists and row readers (store/sql_rows.h)
// over one row of a result, and the NotFound messages every file uses. Thread-safe
// (stateless).
#pragma once

#include <optional>
#include <string>

#include "cohort/status.h"
#include "store/postgres/pg_conn.h"
#include "store/run_ref.h"
#include "store/run_types.h"
#include "store/sql_rows.h"

namespace cohort::store::pg {

// Select lists (store/sql_rows.h).
using store::kRunColumnCount;
using store::kRunColumns;
using store::kWriterColumns;

// Row `row` of a result as the row accessor of store/sql_rows.h. Borrows the result.
class PgRow {
 public:
  PgRow(const PgResult& res, int row) : res_(res), row_(row) {}
  std::string Text(int col) const { return res_.Text(row_, col); }
  int64_t Int(int col) const { return res_.Int(row_, col); }
  std::optional<int64_t> OptInt(int col) const { return res_.OptInt(row_, col); }

 private:
  const PgResult& res_;
  int row_;
};

// Reads row `row` of a result selected with kRunColumns / kWriterColumns from column 0.
inline RunRecord ReadRun(const PgResult& res, int row) { return ReadRunRow(PgRow(res, row)); }
inline WriterRecord ReadWriter(const PgResult& res, int row) {
  return ReadWriterRow(PgRow(res, row));
}

// Shared with every backend (store/run_ref.h).
using store::RunName;
using store::RunNotFound;
using store::WriterNotFound;

}  // namespace cohort::store::pg
