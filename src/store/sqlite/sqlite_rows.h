// Internal to the SQLite store: the shared column lists and row readers (store/sql_rows.h) over
// a statement, and the NotFound messages every file uses. Thread-safe (stateless).
#pragma once

#include <string>

#include "cohort/status.h"
#include "store/run_ref.h"
#include "store/run_types.h"
#include "store/sql_rows.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

// Select lists (store/sql_rows.h).
using store::kRunColumnCount;
using store::kRunColumns;
using store::kWriterColumns;

// Reads a row selected with kRunColumns / kWriterColumns starting at column 0. A statement is
// the row accessor of store/sql_rows.h as it stands.
inline RunRecord ReadRun(const Stmt& st) { return ReadRunRow(st); }
inline WriterRecord ReadWriter(const Stmt& st) { return ReadWriterRow(st); }

// Shared with every backend (store/run_ref.h).
using store::RunName;
using store::RunNotFound;
using store::WriterNotFound;

}  // namespace cohort::store::sqlite
