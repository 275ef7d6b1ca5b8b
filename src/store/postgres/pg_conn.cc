#include "store/postgres/pg_conn.h"

#include <endian.h>

#include <cstring>

namespace cohort::store::pg {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

std::string Be64(uint64_t v) {
  v = htobe64(v);
  return std::string(reinterpret_cast<const char*>(&v), 8);
}

void AppendBe32(std::string* out, uint32_t v) {
  v = htobe32(v);
  out->append(reinterpret_cast<const char*>(&v), 4);
}

uint64_t ReadBe64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return be64toh(v);
}

uint32_t ReadBe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return be32toh(v);
}

// Binary array header for a one-dimensional array of `n` elements of type `elem`.
std::string ArrayHeader(unsigned elem, size_t n) {
  std::string out;
  AppendBe32(&out, n == 0 ? 0 : 1);  // dimensions
  AppendBe32(&out, 0);               // no NULL elements
  AppendBe32(&out, elem);
  if (n > 0) {
    AppendBe32(&out, uint32_t(n));
    AppendBe32(&out, 1);  // lower bound
  }
  return out;
}

std::string ShortSql(std::string_view sql) {
  std::string s(sql.substr(0, 120));
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return sql.size() > 120 ? s + "..." : s;
}

// Maps an SQLSTATE class to a status code.
StatusCode CodeFor(std::string_view state) {
  if (state == "23505") return StatusCode::kAlreadyExists;  // unique_violation
  if (IsRetryableSqlState(state)) return StatusCode::kUnavailable;
  std::string_view cls = state.substr(0, 2);
  if (cls == "08" || cls == "53" || cls == "57") return StatusCode::kUnavailable;  // connection,
  // insufficient resources (disk full, too many connections), operator intervention (shutdown)
  if (cls == "22") return StatusCode::kInvalidArgument;  // data exception (bad encoding, range)
  if (cls == "58") return StatusCode::kIOError;          // system error
  if (state == "XX001" || state == "XX002") return StatusCode::kCorruption;
  return StatusCode::kInternal;
}

}  // namespace

std::string SanitizeText(std::string_view s) {
  if (s.find('\0') == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == '\0') {
      out += kReplacementChar;
    } else {
      out += c;
    }
  }
  return out;
}

std::string SanitizeJsonForJsonb(std::string_view json) {
  std::string out = SanitizeText(json);
  if (out.find("\\u0000") == std::string::npos) return out;
  std::string fixed;
  fixed.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != '\\' || i + 1 >= out.size()) {
      fixed += out[i];
      continue;
    }
    // An escape: copy it whole, so that an escaped backslash is never read as a new escape.
    if (out.compare(i, 6, "\\u0000") == 0) {
      fixed += "\\ufffd";
      i += 5;
    } else {
      fixed += out[i];
      fixed += out[i + 1];
      ++i;
    }
  }
  return fixed;
}

bool IsRetryableSqlState(std::string_view sqlstate) {
  return sqlstate == "40001" || sqlstate == "40P01";  // serialization_failure, deadlock_detected
}

// ---- Params ----

Params& Params::Push(unsigned type, std::string bytes) {
  types_.push_back(type);
  values_.push_back(std::move(bytes));
  nulls_.push_back(false);
  return *this;
}

Params& Params::Add(int64_t v) { return Push(kInt8Oid, Be64(uint64_t(v))); }
Params& Params::Add(bool v) { return Push(kBoolOid, std::string(1, v ? 1 : 0)); }
Params& Params::Add(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return Push(kFloat8Oid, Be64(bits));
}
Params& Params::Add(std::string_view text) { return Push(kTextOid, SanitizeText(text)); }
Params& Params::Add(std::optional<int64_t> v) { return v ? Add(*v) : AddNull(kInt8Oid); }
Params& Params::Add(std::optional<int> v) { return v ? Add(int64_t{*v}) : AddNull(kInt8Oid); }
Params& Params::AddJsonb(std::string_view json) {
  // jsonb binary input: a version byte (1) and the JSON text.
  return Push(kJsonbOid, std::string(1, '\1') + SanitizeJsonForJsonb(json));
}
Params& Params::AddBytes(std::string_view bytes) { return Push(kByteaOid, std::string(bytes)); }
Params& Params::AddNull(TypeOid type) {
  types_.push_back(type);
  values_.emplace_back();
  nulls_.push_back(true);
  return *this;
}

Params& Params::AddArray(const std::vector<int64_t>& v) {
  std::string out = ArrayHeader(kInt8Oid, v.size());
  out.reserve(out.size() + v.size() * 12);
  for (int64_t x : v) {
    AppendBe32(&out, 8);
    out += Be64(uint64_t(x));
  }
  return Push(kInt8ArrayOid, std::move(out));
}

Params& Params::AddArray(const std::vector<double>& v) {
  std::string out = ArrayHeader(kFloat8Oid, v.size());
  out.reserve(out.size() + v.size() * 12);
  for (double x : v) {
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    AppendBe32(&out, 8);
    out += Be64(bits);
  }
  return Push(kFloat8ArrayOid, std::move(out));
}

Params& Params::AddArray(const std::vector<bool>& v) {
  std::string out = ArrayHeader(kBoolOid, v.size());
  for (bool x : v) {
    AppendBe32(&out, 1);
    out += char(x ? 1 : 0);
  }
  return Push(kBoolArrayOid, std::move(out));
}

Params& Params::AddTextArray(const std::vector<std::string>& v) {
  std::string out = ArrayHeader(kTextOid, v.size());
  for (const std::string& x : v) {
    std::string s = SanitizeText(x);
    AppendBe32(&out, uint32_t(s.size()));
    out += s;
  }
  return Push(kTextArrayOid, std::move(out));
}

Params& Params::AddByteaArray(const std::vector<std::string_view>& v) {
  size_t total = 0;
  for (std::string_view x : v) total += x.size() + 4;
  std::string out = ArrayHeader(kByteaOid, v.size());
  out.reserve(out.size() + total);
  for (std::string_view x : v) {
    AppendBe32(&out, uint32_t(x.size()));
    out.append(x);
  }
  return Push(kByteaArrayOid, std::move(out));
}

void Params::Pointers(std::vector<const char*>* values, std::vector<int>* lengths) const {
  values->resize(values_.size());
  lengths->resize(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    (*values)[i] = nulls_[i] ? nullptr : values_[i].data();
    (*lengths)[i] = int(values_[i].size());
  }
}

// ---- PgResult ----

int64_t PgResult::affected() const {
  if (!res_) return 0;
  const char* n = PQcmdTuples(res_.get());
  return (n == nullptr || *n == '\0') ? 0 : std::strtoll(n, nullptr, 10);
}

bool PgResult::IsNull(int row, int col) const {
  return !res_ || row >= rows() || PQgetisnull(res_.get(), row, col);
}

int64_t PgResult::Int(int row, int col) const {
  if (IsNull(row, col)) return 0;
  const char* p = PQgetvalue(res_.get(), row, col);
  switch (PQftype(res_.get(), col)) {
    case kInt8Oid:
      return int64_t(ReadBe64(p));
    case kInt4Oid:
      return int32_t(ReadBe32(p));
    case kInt2Oid: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return int16_t(be16toh(v));
    }
    case kBoolOid:
      return p[0] != 0;
    default:
      return 0;
  }
}

std::optional<int64_t> PgResult::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

double PgResult::Double(int row, int col) const {
  if (IsNull(row, col)) return 0;
  const char* p = PQgetvalue(res_.get(), row, col);
  switch (PQftype(res_.get(), col)) {
    case kFloat8Oid: {
      uint64_t bits = ReadBe64(p);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case kFloat4Oid: {
      uint32_t bits = ReadBe32(p);
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default:
      return double(Int(row, col));
  }
}

std::string_view PgResult::BytesView(int row, int col) const {
  if (IsNull(row, col)) return {};
  return std::string_view(PQgetvalue(res_.get(), row, col),
                          size_t(PQgetlength(res_.get(), row, col)));
}

std::string PgResult::Bytes(int row, int col) const { return std::string(BytesView(row, col)); }

std::string PgResult::Text(int row, int col) const {
  std::string_view v = BytesView(row, col);
  if (PQftype(res_.get(), col) == kJsonbOid && !v.empty()) v.remove_prefix(1);  // version byte
  return std::string(v);
}

// ---- Conn ----

Result<std::unique_ptr<Conn>> Conn::Connect(const ConnInfo& info) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : info) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* raw = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/0);
  if (raw == nullptr) return Status::Unavailable("postgres: out of memory connecting");
  std::unique_ptr<Conn> conn(new Conn(raw));
  if (PQstatus(raw) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(raw);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return Status::Unavailable("postgres: cannot connect: " + msg);
  }
  // Notices ("relation ... already exists, skipping") are not errors; keep them off stderr.
  COHORT_RETURN_IF_ERROR(
      conn->ExecScript("SET client_encoding = 'UTF8'; SET client_min_messages = 'warning'"));
  return conn;
}

Conn::~Conn() { PQfinish(conn_); }

bool Conn::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

bool Conn::in_transaction() const {
  return PQtransactionStatus(conn_) != PQTRANS_IDLE || PQpipelineStatus(conn_) != PQ_PIPELINE_OFF;
}

Result<PgResult> Conn::Check(PGresult* res, std::string_view sql) {
  if (res == nullptr) {
    last_sqlstate_.clear();
    return Status::Unavailable(std::string("postgres: ") + PQerrorMessage(conn_));
  }
  ExecStatusType st = PQresultStatus(res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
    last_sqlstate_.clear();
    return PgResult(res);
  }
  const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  last_sqlstate_ = state ? state : "";
  std::string msg = PQresultErrorMessage(res);
  PQclear(res);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (msg.starts_with("ERROR:  ")) msg = msg.substr(8);
  StatusCode code =
      last_sqlstate_.empty() || broken() ? StatusCode::kUnavailable : CodeFor(last_sqlstate_);
  return Status(code, "postgres: " + msg +
                          (last_sqlstate_.empty() ? "" : " [" + last_sqlstate_ + "]") +
                          " in: " + ShortSql(sql));
}

Result<PgResult> Conn::Exec(std::string_view sql, const Params& params) {
  return Run(sql, params, /*prepared=*/true, /*commit=*/false);
}

Result<PgResult> Conn::ExecOnce(std::string_view sql, const Params& params) {
  return Run(sql, params, /*prepared=*/false, /*commit=*/false);
}

Result<PgResult> Conn::ExecAndCommit(std::string_view sql, const Params& params) {
  return Run(sql, params, /*prepared=*/true, /*commit=*/true);
}

void Conn::DeferBegin(std::string begin_sql) {
  deferred_begin_ = std::move(begin_sql);
  commit_sent_ = false;
}

Status Conn::Commit() {
  if (begin_deferred()) {  // nothing was sent: nothing to commit
    deferred_begin_.clear();
    return Status::Ok();
  }
  if (!in_transaction()) return Status::Ok();  // committed with the last statement
  commit_sent_ = true;
  return ExecScript("COMMIT");
}

Result<PgResult> Conn::Run(std::string_view sql, const Params& params, bool prepared, bool commit) {
  if (begin_deferred() || commit) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PgResult> results,
                            RunPipelined({Statement{sql, &params}}, prepared, commit));
    return std::move(results[0]);
  }
  const char* name = nullptr;
  std::string text(sql);
  if (prepared) {
    auto it = prepared_.find(text);
    if (it == prepared_.end()) {
      std::string new_name = "c" + std::to_string(prepared_.size() + 1);
      COHORT_ASSIGN_OR_RETURN(PgResult ignored,
                              Check(PQprepare(conn_, new_name.c_str(), text.c_str(), params.size(),
                                              params.types().data()),
                                    sql));
      it = prepared_.emplace(text, std::move(new_name)).first;
    }
    name = it->second.c_str();
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  params.Pointers(&values, &lengths);
  std::vector<int> formats(values.size(), 1);
  if (prepared) {
    return Check(PQexecPrepared(conn_, name, params.size(), values.data(), lengths.data(),
                                formats.data(), /*resultFormat=*/1),
                 sql);
  }
  return Check(PQexecParams(conn_, text.c_str(), params.size(), params.types().data(),
                            values.data(), lengths.data(), formats.data(), /*resultFormat=*/1),
               sql);
}

Result<std::vector<PgResult>> Conn::ExecPipeline(const std::vector<Statement>& statements,
                                                 bool commit) {
  return RunPipelined(statements, /*prepared=*/true, commit);
}

Result<std::vector<PgResult>> Conn::RunPipelined(const std::vector<Statement>& statements,
                                                 bool prepared, bool commit) {
  const std::string begin = std::move(deferred_begin_);
  deferred_begin_.clear();
  failed_statement_ = -1;
  if (PQenterPipelineMode(conn_) != 1) {
    return Status::Unavailable(std::string("postgres: cannot enter pipeline mode: ") +
                               PQerrorMessage(conn_));
  }
  // One command sent: its text (for errors), the statement it runs (-1: BEGIN, PREPARE or
  // COMMIT) and, for a PREPARE, the statement name to remember once it went through.
  struct Sent {
    std::string_view sql;
    int statement = -1;
    std::string prepared_as;
  };
  std::vector<Sent> sent;
  std::unordered_map<std::string, std::string> preparing;  // sql -> name, prepared in this pipeline
  std::vector<std::string> texts;
  texts.reserve(statements.size());
  bool ok = true;
  if (!begin.empty()) {
    ok = ok && PQsendQueryParams(conn_, begin.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1);
    sent.push_back(Sent{begin, -1, {}});
  }
  for (size_t k = 0; k < statements.size() && ok; ++k) {
    const Params& params = *statements[k].params;
    texts.emplace_back(statements[k].sql);
    const std::string& text = texts.back();
    const char* name = nullptr;
    if (prepared) {
      if (auto it = prepared_.find(text); it != prepared_.end()) {
        name = it->second.c_str();
      } else if (auto jt = preparing.find(text); jt != preparing.end()) {
        name = jt->second.c_str();
      } else {
        std::string new_name = "c" + std::to_string(prepared_.size() + preparing.size() + 1);
        jt = preparing.emplace(text, new_name).first;
        name = jt->second.c_str();
        ok = ok && PQsendPrepare(conn_, name, text.c_str(), params.size(), params.types().data());
        sent.push_back(Sent{statements[k].sql, -1, std::move(new_name)});
      }
    }
    std::vector<const char*> values;
    std::vector<int> lengths;
    params.Pointers(&values, &lengths);
    std::vector<int> formats(values.size(), 1);
    if (name != nullptr) {
      ok = ok && PQsendQueryPrepared(conn_, name, params.size(), values.data(), lengths.data(),
                                     formats.data(), 1);
    } else {
      ok = ok && PQsendQueryParams(conn_, text.c_str(), params.size(), params.types().data(),
                                   values.data(), lengths.data(), formats.data(), 1);
    }
    sent.push_back(Sent{statements[k].sql, int(k), {}});
  }
  if (commit) {
    ok = ok && PQsendQueryParams(conn_, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 1);
    sent.push_back(Sent{"COMMIT", -1, {}});
    commit_sent_ = true;
  }
  ok = ok && PQpipelineSync(conn_);
  if (!ok) {  // the connection failed while sending; it will not be reused
    last_sqlstate_.clear();
    return Status::Unavailable(std::string("postgres: ") + PQerrorMessage(conn_));
  }
  Status first_error;
  std::string first_state;
  std::vector<PgResult> results(statements.size());
  for (Sent& cmd : sent) {
    PGresult* res = PQgetResult(conn_);
    if (res == nullptr) {
      last_sqlstate_.clear();
      return Status::Unavailable(std::string("postgres: ") + PQerrorMessage(conn_));
    }
    if (PQresultStatus(res) == PGRES_PIPELINE_ABORTED) {  // an earlier command failed
      PQclear(res);
    } else {
      Result<PgResult> r = Check(res, cmd.sql);
      if (!r.ok() && first_error.ok()) {
        first_error = r.status();
        first_state = last_sqlstate_;
        if (!first_state.empty() && !broken()) failed_statement_ = cmd.statement;
      }
      if (r.ok() && cmd.statement >= 0) results[cmd.statement] = std::move(r).value();
      // Prepared statements outlive a failed transaction: remember one once PREPARE went through.
      if (r.ok() && !cmd.prepared_as.empty()) {
        prepared_.emplace(std::string(cmd.sql), std::move(cmd.prepared_as));
      }
    }
    while ((res = PQgetResult(conn_)) != nullptr) PQclear(res);  // the command's end
  }
  if (PGresult* sync = PQgetResult(conn_); sync != nullptr) PQclear(sync);
  PQexitPipelineMode(conn_);
  if (!first_error.ok()) {
    last_sqlstate_ = first_state;
    return first_error;
  }
  last_sqlstate_.clear();
  return results;
}

Status Conn::ExecScript(std::string_view sql) {
  std::string text(sql);
  if (begin_deferred()) {  // one simple query runs several statements
    text = deferred_begin_ + "; " + text;
    deferred_begin_.clear();
  }
  PGresult* res = PQexec(conn_, text.c_str());
  Result<PgResult> r = Check(res, sql);
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace cohort::store::pg
