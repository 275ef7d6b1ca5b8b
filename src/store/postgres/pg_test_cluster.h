// A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a fresh temporary
// directory, a server listening only on a Unix socket in that directory (no TCP port to clash
// with anything), databases created on demand, and on destruction `pg_ctl stop -m fast` and the
// directory removed. As root (this machine, CI) the server programs run as the `postgres` user
// through runuser, since PostgreSQL refuses to run as root.
//
// The programs are found in $COHORT_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin.
// tests/postgres/pg_cluster.py is the Python equivalent for cross-process tests.
//
// Threading: not thread-safe; create and use from one thread (a gtest Environment). The URLs
// it hands out may be used from any thread or process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::store::pg {

class PgTestCluster {
 public:
  struct Options {
    bool durable = false;  // fsync/full_page_writes on (benchmarks); off is faster for tests
    int max_connections = 300;
  };

  // initdb + start; kUnavailable (with the server log's tail) when PostgreSQL is missing or
  // does not start.
  static Result<std::unique_ptr<PgTestCluster>> Start(const Options& options);
  static Result<std::unique_ptr<PgTestCluster>> Start() { return Start(Options()); }
  ~PgTestCluster();
  PgTestCluster(const PgTestCluster&) = delete;
  PgTestCluster& operator=(const PgTestCluster&) = delete;

  // postgresql://postgres@/<db>?host=<socket dir>&port=<port>[&extra]
  std::string Url(const std::string& db, const std::string& extra_query = "") const;
  Status CreateDatabase(const std::string& name);
  // Drops `name`, terminating its connections.
  Status DropDatabase(const std::string& name);
  // Runs SQL statements (no results) on database `db` as the superuser.
  Status Exec(const std::string& db, const std::string& sql);

  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

 private:
  PgTestCluster() = default;
  // Runs a PostgreSQL program (as postgres when root) with its output appended to the log;
  // returns its exit status.
  int RunPgProgram(const std::string& program, const std::vector<std::string>& args);
  std::string LogTail() const;

  std::string bin_dir_;
  std::string dir_;  // temporary directory: data/, the socket, log
  int port_ = 0;
  bool started_ = false;
};

}  // namespace cohort::store::pg
