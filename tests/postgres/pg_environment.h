// The PostgreSQL cluster shared by every test of the postgres_store_test binary: started once
// before the first test (a gtest Environment), stopped and removed after the last. Each test
// asks for a fresh database of its own.
//
// Threading: used from gtest's test thread; the URLs it returns may be used from any thread.
#pragma once

#include <string>

#include "store/postgres/pg_test_cluster.h"

namespace cohort::store::pg {

// The running cluster; null (and every test fails with the reason) when it did not start.
PgTestCluster* TestCluster();
// Why the cluster did not start ("" when it did).
const std::string& TestClusterError();

// A new empty database; returns its name ("" on failure, with a gtest failure recorded).
std::string FreshDatabase();

}  // namespace cohort::store::pg
