// A thin RAII layer over libpq: binary query parameters (Params), binary results (PgResult), and
// one connection (Conn) with a per-connection cache of prepared statements. Errors become Status
// values that name the SQLSTATE and the statement that failed.
//
// Every parameter is sent in binary with an explicit type, and every Exec result comes back in
// binary, so that blobs and doubles cross the wire without text escaping and round-trip bit for
// bit (NaN payloads, -0.0, infinities).
//
// Threading: a Conn and the PgResults obtained from it belong to one thread at a time (the pool
// lends a Conn to one caller); Params and PgResult are plain values.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cohort/status.h"

namespace cohort::store::pg {

// Type OIDs of the built-in types the store uses (fixed by PostgreSQL's catalog).
enum TypeOid : unsigned {
  kBoolOid = 16,
  kByteaOid = 17,
  kInt8Oid = 20,
  kInt2Oid = 21,
  kInt4Oid = 23,
  kTextOid = 25,
  kJsonOid = 114,
  kFloat4Oid = 700,
  kFloat8Oid = 701,
  kBoolArrayOid = 1000,
  kByteaArrayOid = 1001,
  kTextArrayOid = 1009,
  kInt8ArrayOid = 1016,
  kFloat8ArrayOid = 1022,
  kVarcharOid = 1043,
  kJsonbOid = 3802,
};

// Connection parameters as libpq keyword/value pairs (PQconnectdbParams).
using ConnInfo = std::vector<std::pair<std::string, std::string>>;

// Text destined for a PostgreSQL text value: NUL bytes (which text cannot hold) become U+FFFD.
std::string SanitizeText(std::string_view s);
// JSON text destined for jsonb: also rewrites the escape \u0000 (which jsonb rejects) as \ufffd.
std::string SanitizeJsonForJsonb(std::string_view json);

// Positional parameters $1, $2, ... in binary format with explicit types.
class Params {
 public:
  Params& Add(int64_t v);
  Params& Add(int v) { return Add(int64_t{v}); }
  Params& Add(bool v);
  Params& Add(double v);
  Params& Add(std::string_view text);  // text (NUL-sanitized)
  Params& Add(const std::string& text) { return Add(std::string_view(text)); }
  Params& Add(const char* text) { return Add(std::string_view(text)); }
  Params& Add(std::optional<int64_t> v);
  Params& Add(std::optional<int> v);
  Params& AddJsonb(std::string_view json);   // jsonb from JSON text (sanitized)
  Params& AddBytes(std::string_view bytes);  // bytea
  Params& AddNull(TypeOid type);
  // One-dimensional arrays (empty allowed).
  Params& AddArray(const std::vector<int64_t>& v);
  Params& AddArray(const std::vector<double>& v);
  Params& AddArray(const std::vector<bool>& v);
  Params& AddTextArray(const std::vector<std::string>& v);
  Params& AddByteaArray(const std::vector<std::string_view>& v);

  int size() const { return int(types_.size()); }
  const std::vector<unsigned>& types() const { return types_; }
  // Pointer arrays for PQexecPrepared; valid while this Params lives and is not modified.
  void Pointers(std::vector<const char*>* values, std::vector<int>* lengths) const;

 private:
  Params& Push(unsigned type, std::string bytes);
  std::vector<unsigned> types_;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

// A query result in binary format. Getters convert from the column's type (integers from int2/4/8
// and bool, doubles from float4/8, text from text-like types and jsonb); reading a column of
// another type or out of range gives a zero value.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* res) : res_(res, &PQclear) {}

  int rows() const { return res_ ? PQntuples(res_.get()) : 0; }
  // Rows changed by INSERT/UPDATE/DELETE.
  int64_t affected() const;
  bool IsNull(int row, int col) const;
  int64_t Int(int row, int col) const;
  std::optional<int64_t> OptInt(int row, int col) const;
  bool Bool(int row, int col) const { return Int(row, col) != 0; }
  double Double(int row, int col) const;
  std::string Text(int row, int col) const;
  std::string Bytes(int row, int col) const;
  std::string_view BytesView(int row, int col) const;

 private:
  std::shared_ptr<PGresult> res_;
};

// One connection with its cache of prepared statements.
class Conn {
 public:
  static Result<std::unique_ptr<Conn>> Connect(const ConnInfo& info);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Runs `sql` with `params`, preparing it on first use on this connection (static SQL).
  Result<PgResult> Exec(std::string_view sql, const Params& params = Params());
  // Runs `sql` once without keeping a prepared statement (dynamic SQL).
  Result<PgResult> ExecOnce(std::string_view sql, const Params& params = Params());
  // Runs one or more statements without parameters (DDL, BEGIN, COMMIT). Text results.
  Status ExecScript(std::string_view sql);

  // Round trips saved with libpq's pipeline mode: DeferBegin(sql) sends `sql` (a BEGIN) together
  // with the next Exec/ExecOnce/ExecAndCommit instead of on its own; ExecAndCommit sends COMMIT
  // together with its statement. A failure of either is the statement's failure.
  void DeferBegin(std::string begin_sql);
  bool begin_deferred() const { return !deferred_begin_.empty(); }
  void DropDeferredBegin() { deferred_begin_.clear(); }
  Result<PgResult> ExecAndCommit(std::string_view sql, const Params& params);
  // One statement of a pipeline; `params` must outlive the call.
  struct Statement {
    std::string_view sql;
    const Params* params;
  };
  // Sends the deferred BEGIN (if any), `statements` (static SQL, prepared on first use) and, when
  // `commit`, COMMIT in one pipeline: one round trip. Returns each statement's result, or the
  // first failure (the commands after it are not run, so nothing is committed).
  Result<std::vector<PgResult>> ExecPipeline(const std::vector<Statement>& statements, bool commit);
  // After a failed ExecPipeline: the index in `statements` of the statement that failed with an
  // error of its own (an SQL error, the connection still up); -1 when BEGIN, PREPARE or COMMIT
  // failed, the connection failed, or the last pipeline succeeded.
  int failed_statement() const { return failed_statement_; }
  // Sends COMMIT (or does nothing when the BEGIN is still deferred: nothing ran).
  Status Commit();
  // COMMIT was sent since the last BEGIN: when the connection then fails, whether the
  // transaction committed is unknown, so it must not simply be run again.
  bool commit_sent() const { return commit_sent_; }

  // The connection failed (server gone, network); it must not be reused.
  bool broken() const;
  // Inside a transaction block (also an aborted one), or in pipeline mode (left only by a
  // failure midway): either way the connection must not go back to the pool as it is.
  bool in_transaction() const;
  // SQLSTATE of the last failed statement ("" when it failed without one, e.g. connection lost).
  const std::string& last_sqlstate() const { return last_sqlstate_; }
  // Backend process id (for tests and diagnostics).
  int backend_pid() const { return PQbackendPID(conn_); }
  PGconn* raw() { return conn_; }

 private:
  explicit Conn(PGconn* conn) : conn_(conn) {}
  // Turns a finished PGresult into a PgResult or an error Status.
  Result<PgResult> Check(PGresult* res, std::string_view sql);
  // Exec (prepared) or ExecOnce, with the deferred BEGIN before and COMMIT after when asked.
  Result<PgResult> Run(std::string_view sql, const Params& params, bool prepared, bool commit);
  // Sends BEGIN, PREPAREs (when `prepared`; else unnamed statements), the statements and COMMIT
  // as needed in one pipeline and reads the results.
  Result<std::vector<PgResult>> RunPipelined(const std::vector<Statement>& statements,
                                             bool prepared, bool commit);

  PGconn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // sql -> statement name
  std::string last_sqlstate_;
  std::string deferred_begin_;
  bool commit_sent_ = false;
  int failed_statement_ = -1;
};

// SQLSTATEs after which the whole transaction may simply be run again.
bool IsRetryableSqlState(std::string_view sqlstate);

}  // namespace cohort::store::pg
