// Parsing of a PostgreSQL store URL into libpq connection parameters and the store's own options.
//
//   postgresql://user:password@host:port/dbname?sslmode=require&pool_size=32
//
// The store's options are taken out of the query string; everything else is handed to libpq
// (which checks it), so every libpq URI form works: several hosts for failover
// (host1:5432,host2:5432 with target_session_attrs=read-write), a Unix-socket directory
// (?host=/run/postgresql), sslmode, options=-csearch_path=cohort, ...
//
// Store options:
//   pool_size=N        connections to the primary per server process (default 16)
//   pool_timeout_ms=N  how long a call waits for a free connection (default 10000)
//   read_hosts=h1:p1,h2:p2
//                      read replicas for run lists and history/console queries (default: none,
//                      everything goes to the primary); same user, password and database
//   read_pool_size=N   connections to the replicas (default: pool_size)
//   ingest_cache=off   store every batch through the path that reads the writer's rows first
//                      (default on: one round trip per batch from the state this server last
//                      wrote, pg_ingest.cc); for comparisons and diagnosis
//   group_commit=N     at most N batch transactions in flight per server; batches that arrive
//                      meanwhile share the next one (pg_group_commit.h). Default 0 (also
//                      "off"): every batch commits on its own (docs/benchmarks.md, PostgreSQL:
//                      not faster on the shared 2-core machine)
//
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "cohort/status.h"
#include "store/postgres/pg_conn.h"

namespace cohort::store::pg {

struct PostgresOptions {
  ConnInfo conninfo;       // the primary
  ConnInfo read_conninfo;  // the replicas; empty: reads go to the primary
  int pool_size = 16;
  int read_pool_size = 16;
  std::chrono::milliseconds pool_timeout{10000};
  bool ingest_cache = true;
  int group_commit = 0;  // 0: off
  // false: a database without Cohort's schema is refused (kNotFound) and left as it is, for the
  // commands that act on the servers' store (store::OpenExistingStore).
  bool create_schema = true;
};

// kInvalidArgument naming the fault: not a postgresql:// or postgres:// URL, a bad store option,
// or a URL libpq rejects.
Result<PostgresOptions> ParsePostgresUrl(const std::string& url);

// "host=... port=... dbname=..." without the password, for logs and errors.
std::string DescribeConnInfo(const ConnInfo& info);

}  // namespace cohort::store::pg
