// The small connection interface the shared SQL store (sql_store.h) runs its statements through,
// implemented by both engines (sqlite/sqlite_sql_conn.h, postgres/pg_sql_conn.h).
//
// Statements are written once, in PostgreSQL's syntax restricted to what both engines share:
// parameters $1, $2, ... (a parameter may be used twice), greatest()/least() of two values,
// strpos(), `x = ANY($n)` / `x <> ALL($n)` over an array parameter, true/false, RETURNING,
// INSERT ... ON CONFLICT, and `FOR UPDATE` row locks. The SQLite connection renders them for
// SQLite once per statement (sql_dialect.h RenderForSqlite); PostgreSQL runs them as written.
//
// Threading: a Conn belongs to the one call that runs in its transaction; Params and rows are
// plain values used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::store::sql {

// The type of a parameter: also how each engine binds it.
enum class Type {
  kInt,          // int64
  kBool,         // boolean (SQLite: 0/1)
  kDouble,       // a double SQL compares (SQLite: NaN binds NULL)
  kStored,       // a double stored bit for bit (SQLite: NaN as NULL, -0.0 as its 8 bytes)
  kText,         // text (PostgreSQL: NUL characters become U+FFFD)
  kBlob,         // bytes
  kJson,         // JSON text (PostgreSQL: jsonb; SQLite: text)
  kIntArray,     // for = ANY($n) (SQLite: a JSON array read with json_each)
  kDoubleArray,  // for = ANY($n)
  kTextArray,    // for = ANY($n)
};

// The parameters $1, $2, ... of one statement, in order.
class Params {
 public:
  // One parameter: its type and, unless null, its value in the member its type names (integers
  // and booleans in `i`, doubles in `d`, text, blobs and JSON in `s`, arrays in theirs).
  struct Param {
    Type type = Type::kInt;
    bool null = false;
    int64_t i = 0;
    double d = 0;
    std::string s;
    std::vector<int64_t> ints;
    std::vector<double> doubles;
    std::vector<std::string> texts;
  };

  Params& Add(int64_t v) {
    Push(Type::kInt).i = v;
    return *this;
  }
  Params& Add(int v) { return Add(int64_t{v}); }
  Params& Add(bool v) {
    Push(Type::kBool).i = v ? 1 : 0;
    return *this;
  }
  Params& Add(double v) {
    Push(Type::kDouble).d = v;
    return *this;
  }
  Params& Add(std::string_view v) {
    Push(Type::kText).s = v;
    return *this;
  }
  Params& Add(const std::string& v) { return Add(std::string_view(v)); }
  Params& Add(const char* v) { return Add(std::string_view(v)); }
  Params& Add(std::optional<int64_t> v) { return v ? Add(*v) : AddNull(Type::kInt); }
  Params& Add(std::optional<int> v) { return v ? Add(int64_t{*v}) : AddNull(Type::kInt); }
  Params& AddStored(double v) {
    Push(Type::kStored).d = v;
    return *this;
  }
  Params& AddBlob(std::string_view v) {
    Push(Type::kBlob).s = v;
    return *this;
  }
  Params& AddJson(std::string_view v) {
    Push(Type::kJson).s = v;
    return *this;
  }
  Params& AddNull(Type type) {
    Push(type).null = true;
    return *this;
  }
  Params& AddArray(std::vector<int64_t> v) {
    Push(Type::kIntArray).ints = std::move(v);
    return *this;
  }
  Params& AddArray(std::vector<double> v) {
    Push(Type::kDoubleArray).doubles = std::move(v);
    return *this;
  }
  Params& AddTextArray(std::vector<std::string> v) {
    Push(Type::kTextArray).texts = std::move(v);
    return *this;
  }

  // The placeholder of the parameter added last ("$3"): for statements built piece by piece.
  std::string Last() const { return "$" + std::to_string(params_.size()); }
  size_t size() const { return params_.size(); }
  const std::vector<Param>& params() const { return params_; }

 private:
  Param& Push(Type type) {
    params_.emplace_back();
    params_.back().type = type;
    return params_.back();
  }
  std::vector<Param> params_;
};

// The current row of a result. Integers read booleans as 0/1; Double reads NULL as NaN; Text
// reads JSON columns as their text.
class Row {
 public:
  virtual ~Row() = default;
  virtual bool IsNull(int col) const = 0;
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;
  virtual std::string Text(int col) const = 0;
  // A text or blob column in place: valid until the next Next() of its Rows.
  virtual std::string_view Bytes(int col) const = 0;
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Int(col);
  }
};

// The rows of a statement, read one after the other: Next() moves to the next row (false after
// the last one).
class Rows : public Row {
 public:
  virtual Result<bool> Next() = 0;
};

// Whether a statement is kept prepared on its connection (static SQL) or prepared for one run
// (SQL built from a request: filters of varying shape).
enum class Prepare { kCached, kOnce };

// One connection inside the transaction of one call.
class Conn {
 public:
  virtual ~Conn() = default;
  // Runs one statement and returns its rows.
  virtual Result<std::unique_ptr<Rows>> Query(std::string_view sql, const Params& params = {},
                                              Prepare prepare = Prepare::kCached) = 0;
  // Runs one statement; returns the number of rows it inserted, updated or deleted.
  virtual Result<int64_t> Exec(std::string_view sql, const Params& params = {},
                               Prepare prepare = Prepare::kCached) = 0;
  // Runs statements without parameters or results (DDL), as written for this engine.
  virtual Status ExecScript(std::string_view sql) = 0;
  // Calls `fn` with every row of a statement that may return more rows than fit in memory (the
  // store dump), stopping at its first error.
  virtual Status Scan(std::string_view sql, const std::function<Status(const Row&)>& fn);
};

// Reads the first row of `sql` with `read`, or returns `missing` when there is none.
template <typename T, typename ReadFn>
Result<T> QueryOne(Conn& conn, std::string_view sql, const Params& params, ReadFn read,
                   const Status& missing, Prepare prepare = Prepare::kCached) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Rows> rows, conn.Query(sql, params, prepare));
  COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
  if (!row) return missing;
  return T(read(*rows));
}

// Reads every row of `sql` with `read` into a vector.
template <typename T, typename ReadFn>
Result<std::vector<T>> QueryAll(Conn& conn, std::string_view sql, const Params& params, ReadFn read,
                                Prepare prepare = Prepare::kCached) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Rows> rows, conn.Query(sql, params, prepare));
  std::vector<T> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
    if (!row) return out;
    out.push_back(read(*rows));
  }
}

// The integer in the first column of the first row of `sql` (0 when there is no row).
Result<int64_t> QueryInt(Conn& conn, std::string_view sql, const Params& params = {});

}  // namespace cohort::store::sql
