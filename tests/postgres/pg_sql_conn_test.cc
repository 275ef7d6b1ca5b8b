// The shared connection cases (store/sql/sql_conn_conformance.h) over a real PostgreSQL
// connection, each in a fresh database of the test cluster.
#include <gtest/gtest.h>

#include <memory>

#include "pg_environment.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_sql_conn.h"
#include "store/sql/sql_conn_conformance.h"

namespace cohort::store {
namespace {

namespace cases = sql::conn_cases;

class PgSqlConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = pg::FreshDatabase();
    ASSERT_FALSE(db_.empty());
    auto options = pg::ParsePostgresUrl(pg::TestCluster()->Url(db_, ""));
    ASSERT_TRUE(options.ok()) << options.status().ToString();
    auto conn = pg::Conn::Connect(options->conninfo);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    raw_ = std::move(conn).value();
    conn_ = std::make_unique<pg::SqlConn>(raw_.get());
    cases::CreateTable(*conn_, sql::Engine::kPostgres);
  }
  void TearDown() override {
    conn_.reset();
    raw_.reset();
    if (!db_.empty() && pg::TestCluster() != nullptr) (void)pg::TestCluster()->DropDatabase(db_);
  }

  std::string db_;
  std::unique_ptr<pg::Conn> raw_;
  std::unique_ptr<sql::Conn> conn_;  // through the interface, as the shared store uses it
};

TEST_F(PgSqlConnTest, ParametersBindByTypeAndRowsReadThemBack) {
  cases::ParametersBindByTypeAndRowsReadThemBack(*conn_);
}
TEST_F(PgSqlConnTest, StoredDoublesKeepTheirBits) { cases::StoredDoublesKeepTheirBits(*conn_); }
TEST_F(PgSqlConnTest, ArrayParametersMatchWithAnyAndAll) {
  cases::ArrayParametersMatchWithAnyAndAll(*conn_);
}
TEST_F(PgSqlConnTest, UpsertReturningAndChangedRowCounts) {
  cases::UpsertReturningAndChangedRowCounts(*conn_);
}
TEST_F(PgSqlConnTest, ScanStopsAtTheFirstErrorOfItsCallback) {
  cases::ScanStopsAtTheFirstErrorOfItsCallback(*conn_);
}

}  // namespace
}  // namespace cohort::store
