#include "store/sqlite/sqlite_db.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "store/sql/sql_dialect.h"

namespace cohort::store::sqlite {

Status SqliteError(int rc, std::string_view what) {
  std::string msg = "sqlite: " + std::string(what) + " (" + sqlite3_errstr(rc) + ")";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
      return Status::Unavailable(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(std::move(msg));
    case SQLITE_CONSTRAINT:
      return Status::AlreadyExists(std::move(msg));
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return Status::IOError(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

// ---- Stmt ----

Stmt::~Stmt() {
  if (stmt_ == nullptr) return;
  if (in_use_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

Stmt::Stmt(Stmt&& o) noexcept
    : stmt_(std::exchange(o.stmt_, nullptr)),
      in_use_(std::exchange(o.in_use_, nullptr)),
      next_param_(o.next_param_),
      bind_status_(std::move(o.bind_status_)) {}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    this->~Stmt();
    stmt_ = std::exchange(o.stmt_, nullptr);
    in_use_ = std::exchange(o.in_use_, nullptr);
    next_param_ = o.next_param_;
    bind_status_ = std::move(o.bind_status_);
  }
  return *this;
}

Status Stmt::Check(int rc) {
  if (rc == SQLITE_OK) return Status::Ok();
  return SqliteError(rc, std::string("binding a parameter of ") + sqlite3_sql(stmt_));
}

Stmt& Stmt::Bind(int64_t v) {
  Status s = Check(sqlite3_bind_int64(stmt_, next_param_++, v));
  if (bind_status_.ok()) bind_status_ = std::move(s);
  return *this;
}

Stmt& Stmt::Bind(double v) {
  if (std::isnan(v)) return BindNull();
  Status s = Check(sqlite3_bind_double(stmt_, next_param_++, v));
  if (bind_status_.ok()) bind_status_ = std::move(s);
  return *this;
}

Stmt& Stmt::BindKeepingSign(double v) {
  if (v != 0 || !std::signbit(v)) return Bind(v);
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  return BindBlob(std::string_view(bytes, sizeof bytes));
}

Stmt& Stmt::Bind(std::string_view v) {
  Status s = Check(
      sqlite3_bind_text64(stmt_, next_param_++, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  if (bind_status_.ok()) bind_status_ = std::move(s);
  return *this;
}

Stmt& Stmt::Bind(std::optional<int64_t> v) { return v ? Bind(*v) : BindNull(); }
Stmt& Stmt::Bind(std::optional<int> v) { return v ? Bind(int64_t{*v}) : BindNull(); }

Stmt& Stmt::BindBlob(std::string_view v) {
  Status s = Check(sqlite3_bind_blob64(stmt_, next_param_++, v.data(), v.size(), SQLITE_TRANSIENT));
  if (bind_status_.ok()) bind_status_ = std::move(s);
  return *this;
}

Stmt& Stmt::BindNull() {
  Status s = Check(sqlite3_bind_null(stmt_, next_param_++));
  if (bind_status_.ok()) bind_status_ = std::move(s);
  return *this;
}

Result<bool> Stmt::Step() {
  if (!bind_status_.ok()) return bind_status_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_errmsg carries the detail (e.g. which constraint failed).
  std::string what = sqlite3_errmsg(sqlite3_db_handle(stmt_));
  what += " in: ";
  what += sqlite3_sql(stmt_);
  return SqliteError(rc, what);
}

Status Stmt::Run() {
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  next_param_ = 1;
  bind_status_ = Status::Ok();
}

bool Stmt::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(stmt_, col); }

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

double Stmt::Double(int col) const {
  const int type = sqlite3_column_type(stmt_, col);
  if (type == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
  if (type == SQLITE_BLOB && sqlite3_column_bytes(stmt_, col) == int{sizeof(double)}) {
    double v;  // written by BindKeepingSign
    std::memcpy(&v, sqlite3_column_blob(stmt_, col), sizeof v);
    return v;
  }
  return sqlite3_column_double(stmt_, col);
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col));
}

std::string Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  if (p == nullptr) return {};
  return std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, col));
}

std::string_view Stmt::BlobView(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  if (p == nullptr) return {};
  return std::string_view(static_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col)));
}

// ---- Db ----

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, int flags, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    return SqliteError(rc, "opening " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  return std::unique_ptr<Db>(new Db(raw));
}

Db::~Db() {
  for (auto& [sql, entry] : cache_) sqlite3_finalize(entry->stmt);
  sqlite3_close_v2(db_);
}

Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string what = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return SqliteError(rc, what + " in: " + text.substr(0, 200));
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), int(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteError(rc, std::string(sqlite3_errmsg(db_)) + " preparing: " + std::string(sql));
  }
  return Stmt(stmt, nullptr);
}

Result<Stmt> Db::Cached(std::string_view sql) { return CachedAs(std::string(sql), sql); }

Result<Stmt> Db::CachedShared(std::string_view shared_sql) {
  // Keys of shared statements start with a byte no SQLite statement starts with.
  std::string key = "\x01" + std::string(shared_sql);
  if (auto it = cache_.find(key); it != cache_.end() && !it->second->in_use) {
    it->second->in_use = true;
    return Stmt(it->second->stmt, &it->second->in_use);
  }
  return CachedAs(std::move(key), sql::RenderForSqlite(shared_sql));
}

Result<Stmt> Db::CachedAs(std::string key, std::string_view sql) {
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                                nullptr);
    if (rc != SQLITE_OK) {
      return SqliteError(rc, std::string(sqlite3_errmsg(db_)) + " preparing: " + std::string(sql));
    }
    auto entry = std::make_unique<CacheEntry>();
    entry->stmt = stmt;
    it = cache_.emplace(std::move(key), std::move(entry)).first;
  }
  CacheEntry& e = *it->second;
  if (e.in_use) return Prepare(sql);
  e.in_use = true;
  return Stmt(e.stmt, &e.in_use);
}

Result<int64_t> Db::QueryInt(std::string_view sql) {
  COHORT_ASSIGN_OR_RETURN(Stmt st, Prepare(sql));
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Int(0) : 0;
}

// ---- Txn ----

Result<Txn> Txn::Begin(Db* db, Mode mode) {
  COHORT_RETURN_IF_ERROR(db->Exec(mode == Mode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN"));
  return Txn(db);
}

Txn::~Txn() {
  if (db_ != nullptr) (void)db_->Exec("ROLLBACK");
}

Status Txn::Commit() {
  Db* db = std::exchange(db_, nullptr);
  Status s = db->Exec("COMMIT");
  if (!s.ok()) (void)db->Exec("ROLLBACK");
  return s;
}

}  // namespace cohort::store::sqlite
