// The shared connection cases (sql/sql_conn_conformance.h) over a real SQLite connection.
#include "store/sqlite/sqlite_sql_conn.h"

#include <gtest/gtest.h>

#include <memory>

#include "store/sql/sql_conn_conformance.h"

namespace cohort::store::sqlite {
namespace {

namespace cases = sql::conn_cases;

class SqliteSqlConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Db::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    conn_ = std::make_unique<SqlConn>(db_.get());
    cases::CreateTable(*conn_, sql::Engine::kSqlite);
  }

  std::unique_ptr<Db> db_;
  std::unique_ptr<sql::Conn> conn_;  // through the interface, as the shared store uses it
};

TEST_F(SqliteSqlConnTest, ParametersBindByTypeAndRowsReadThemBack) {
  cases::ParametersBindByTypeAndRowsReadThemBack(*conn_);
}
TEST_F(SqliteSqlConnTest, StoredDoublesKeepTheirBits) { cases::StoredDoublesKeepTheirBits(*conn_); }
TEST_F(SqliteSqlConnTest, ArrayParametersMatchWithAnyAndAll) {
  cases::ArrayParametersMatchWithAnyAndAll(*conn_);
}
TEST_F(SqliteSqlConnTest, UpsertReturningAndChangedRowCounts) {
  cases::UpsertReturningAndChangedRowCounts(*conn_);
}
TEST_F(SqliteSqlConnTest, ScanStopsAtTheFirstErrorOfItsCallback) {
  cases::ScanStopsAtTheFirstErrorOfItsCallback(*conn_);
}

}  // namespace
}  // namespace cohort::store::sqlite
