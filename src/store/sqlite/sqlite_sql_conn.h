// The shared store's connection interface (sql/sql_conn.h) over one SQLite connection: shared
// statements are rendered for SQLite once and kept prepared (Db::CachedShared), parameters bound
// by their type (arrays as JSON arrays, stored doubles keeping their bits).
//
// Threading: as the Db it wraps (one thread at a time).
#pragma once

#include "store/sql/sql_conn.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

class SqlConn final : public sql::Conn {
 public:
  explicit SqlConn(sqlite::Db* db) : db_(db) {}

  Result<std::unique_ptr<sql::Rows>> Query(std::string_view sql, const sql::Params& params,
                                           sql::Prepare prepare) override;
  Result<int64_t> Exec(std::string_view sql, const sql::Params& params,
                       sql::Prepare prepare) override;
  Status ExecScript(std::string_view sql) override { return db_->Exec(sql); }
  // The connection, for SQLite's own parts of a shared call (SqliteStore's hooks).
  Db* db() const { return db_; }

 private:
  Result<Stmt> Bound(std::string_view sql, const sql::Params& params, sql::Prepare prepare);
  Db* db_;
};

}  // namespace cohort::store::sqlite
