// A thin RAII layer over the SQLite C API: a connection (Db), prepared statements (Stmt) with
// positional binding, a per-connection cache of prepared statements, and transactions (Txn).
// Errors become Status values naming the SQL that failed.
//
// Threading: a Db and everything obtained from it belong to one thread at a time (connections
// are opened with SQLITE_OPEN_NOMUTEX); the owner serialises access.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cohort/status.h"

namespace cohort::store::sqlite {

// Maps an SQLite result code to a Status: busy/locked/full -> kUnavailable, corrupt ->
// kCorruption, constraint -> kAlreadyExists, I/O -> kIOError, others kInternal.
Status SqliteError(int rc, std::string_view what);

// A prepared statement. Bind() calls fill the parameters left to right (1, 2, ...); Step()
// advances; column getters read the current row. A statement owned by a Db's cache is reset and
// its bindings cleared when the Stmt goes away; an owned one is finalized. A bind error (out of
// memory, too many parameters) is reported by the next Step(). Used by one thread at a time, the
// one that owns its Db.
class Stmt {
 public:
  Stmt() = default;
  // `in_use` (cache entries only) is cleared when the Stmt goes away; null means owned.
  Stmt(sqlite3_stmt* stmt, bool* in_use) : stmt_(stmt), in_use_(in_use) {}
  ~Stmt();
  Stmt(Stmt&& o) noexcept;
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int64_t v);
  Stmt& Bind(int v) { return Bind(int64_t{v}); }
  Stmt& Bind(bool v) { return Bind(int64_t{v ? 1 : 0}); }
  // NaN binds NULL (SQLite cannot store NaN as REAL); Double() reads NULL back as NaN.
  Stmt& Bind(double v);
  // For stored values whose bits matter (chunk summaries): as Bind(double), but -0.0 binds as
  // its 8 bytes, since a REAL column stores a whole number as an integer and drops the sign.
  // Double() reads such a blob back. Not for values SQL compares.
  Stmt& BindKeepingSign(double v);
  Stmt& Bind(std::string_view v);
  Stmt& Bind(const std::string& v) { return Bind(std::string_view(v)); }
  Stmt& Bind(const char* v) { return Bind(std::string_view(v)); }
  Stmt& Bind(std::optional<int64_t> v);
  Stmt& Bind(std::optional<int> v);
  Stmt& BindBlob(std::string_view v);
  Stmt& BindNull();

  // True when a row is available, false when the statement is done.
  Result<bool> Step();
  // Steps to completion, ignoring rows.
  Status Run();
  // Rewinds for another execution with new bindings.
  void Reset();

  bool IsNull(int col) const;
  int64_t Int(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::string Blob(int col) const;
  // The blob in place: valid until the next Step() or Reset() of this statement.
  std::string_view BlobView(int col) const;

 private:
  Status Check(int rc);
  sqlite3_stmt* stmt_ = nullptr;
  bool* in_use_ = nullptr;
  int next_param_ = 1;
  Status bind_status_;
};

// One SQLite connection with a cache of prepared statements. Used by one thread at a time.
class Db {
 public:
  static Result<std::unique_ptr<Db>> Open(const std::string& path, int flags, int busy_timeout_ms);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements without results.
  Status Exec(std::string_view sql);
  // A fresh statement, finalized when the Stmt goes away (dynamic SQL).
  Result<Stmt> Prepare(std::string_view sql);
  // A statement from the connection's cache (static SQL, prepared once). When the cached
  // statement is already in use (nested use), a fresh one is prepared instead.
  Result<Stmt> Cached(std::string_view sql);
  // As Cached, for a statement in the shared syntax of sql/sql_conn.h: rendered for SQLite
  // (sql/sql_dialect.h RenderForSqlite) when first prepared.
  Result<Stmt> CachedShared(std::string_view shared_sql);
  // Runs a query expected to return one integer (0 when there is no row).
  Result<int64_t> QueryInt(std::string_view sql);

  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  struct CacheEntry {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  Result<Stmt> CachedAs(std::string key, std::string_view sql);
  std::unordered_map<std::string, std::unique_ptr<CacheEntry>> cache_;  // by SQL as given
};

// A transaction that rolls back unless committed. Move-only; used by the thread that owns its Db.
class Txn {
 public:
  enum class Mode { kRead, kWrite };
  static Result<Txn> Begin(Db* db, Mode mode);
  ~Txn();
  Txn(Txn&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Txn& operator=(Txn&&) = delete;
  Txn(const Txn&) = delete;

  Status Commit();

 private:
  explicit Txn(Db* db) : db_(db) {}
  Db* db_;
};

}  // namespace cohort::store::sqlite
