// Tests only (linked into the store test binaries with the store conformance suite): the cases
// of the shared connection interface (sql_conn.h) that every engine's connection must pass
// (sqlite/sqlite_sql_conn_test.cc, tests/postgres/pg_sql_conn_test.cc): the shared syntax
// rendered for the engine, parameters bound by their type, rows read back, and the helpers over
// them. Each case runs on an empty database with CreateTable's table, outside a transaction;
// failures are gtest failures.
#pragma once

#include "store/sql/sql_conn.h"
#include "store/sql/sql_dialect.h"

namespace cohort::store::sql::conn_cases {

// Creates the table the cases use: t (pk, name unique, flag, v, n, data, doc).
void CreateTable(Conn& conn, Engine engine);

void ParametersBindByTypeAndRowsReadThemBack(Conn& conn);
// A stored double keeps its bits: -0.0 stays negative, NaN reads back as NaN.
void StoredDoublesKeepTheirBits(Conn& conn);
void ArrayParametersMatchWithAnyAndAll(Conn& conn);
void UpsertReturningAndChangedRowCounts(Conn& conn);
void ScanStopsAtTheFirstErrorOfItsCallback(Conn& conn);

}  // namespace cohort::store::sql::conn_cases
