// The fixture of the PostgreSQL-specific store tests: a database of its own per test, stores on
// it and a direct connection to inspect (or damage) it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "pg_environment.h"
#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

// A database of its own per test, with helpers to open stores and inspect it. Single-threaded
// setup; Open() and Query() may be called from any thread.
class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = pg::FreshDatabase();
    ASSERT_FALSE(db_.empty());
  }
  void TearDown() override {
    if (!db_.empty() && pg::TestCluster() != nullptr) (void)pg::TestCluster()->DropDatabase(db_);
  }

  std::string Url(const std::string& extra = "") const {
    return pg::TestCluster()->Url(db_, extra);
  }
  Result<std::unique_ptr<PostgresStore>> Open(const std::string& extra = "") const {
    return PostgresStore::OpenUrl(Url(extra));
  }
  // A direct connection (not from a store's pool).
  std::unique_ptr<pg::Conn> Raw() const {
    auto options = pg::ParsePostgresUrl(Url());
    EXPECT_TRUE(options.ok()) << options.status().ToString();
    options->conninfo.emplace_back("application_name", "cohort-test");  // not the store's
    auto conn = pg::Conn::Connect(options->conninfo);
    EXPECT_TRUE(conn.ok()) << conn.status().ToString();
    return conn.ok() ? std::move(conn).value() : nullptr;
  }
  // The first column of the first row of `sql` as an integer (-1 on error).
  int64_t QueryInt(const std::string& sql) const {
    auto conn = Raw();
    if (conn == nullptr) return -1;
    auto res = conn->ExecOnce(sql);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? res->Int(0, 0) : -1;
  }

  static RunRef Ref(const std::string& id) { return RunRef{"acme", "vision", id}; }

  std::string db_;
};

}  // namespace cohort::store
