// The shared store's connection interface (sql/sql_conn.h) over one PostgreSQL connection:
// statements run as written (the shared syntax is PostgreSQL's), parameters in binary with their
// types (pg_conn.h Params), and Scan through a cursor so that memory stays bounded.
//
// Threading: as the Conn it wraps (one thread at a time).
#pragma once

#include "store/postgres/pg_conn.h"
#include "store/sql/sql_conn.h"

namespace cohort::store::pg {

class SqlConn final : public sql::Conn {
 public:
  explicit SqlConn(pg::Conn* conn) : conn_(conn) {}

  Result<std::unique_ptr<sql::Rows>> Query(std::string_view sql, const sql::Params& params,
                                           sql::Prepare prepare) override;
  Result<int64_t> Exec(std::string_view sql, const sql::Params& params,
                       sql::Prepare prepare) override;
  Status ExecScript(std::string_view sql) override { return conn_->ExecScript(sql); }
  Status Scan(std::string_view sql, const std::function<Status(const sql::Row&)>& fn) override;

 private:
  Result<PgResult> Run(std::string_view sql, const sql::Params& params, sql::Prepare prepare);
  pg::Conn* conn_;
};

}  // namespace cohort::store::pg
