#include "store/postgres/pg_sql_conn.h"

#include <cmath>
#include <limits>

namespace cohort::store::pg {
namespace {

// Rows fetched per cursor round trip of Scan (run files may be large: keep it modest).
constexpr int kScanRows = 200;

// The rows of a result, all received.
class PgRows final : public sql::Rows {
 public:
  explicit PgRows(PgResult res) : res_(std::move(res)) {}
  Result<bool> Next() override { return ++row_ < res_.rows(); }
  bool IsNull(int col) const override { return res_.IsNull(row_, col); }
  int64_t Int(int col) const override { return res_.Int(row_, col); }
  double Double(int col) const override {
    return IsNull(col) ? std::numeric_limits<double>::quiet_NaN() : res_.Double(row_, col);
  }
  std::string Text(int col) const override { return res_.Text(row_, col); }
  std::string_view Bytes(int col) const override { return res_.BytesView(row_, col); }

 private:
  PgResult res_;
  int row_ = -1;
};

TypeOid NullOid(sql::Type type) {
  switch (type) {
    case sql::Type::kInt:
      return kInt8Oid;
    case sql::Type::kBool:
      return kBoolOid;
    case sql::Type::kDouble:
    case sql::Type::kStored:
      return kFloat8Oid;
    case sql::Type::kText:
      return kTextOid;
    case sql::Type::kBlob:
      return kByteaOid;
    case sql::Type::kJson:
      return kJsonbOid;
    case sql::Type::kIntArray:
      return kInt8ArrayOid;
    case sql::Type::kDoubleArray:
      return kFloat8ArrayOid;
    case sql::Type::kTextArray:
      return kTextArrayOid;
  }
  return kTextOid;
}

Params ToPg(const sql::Params& params) {
  Params p;
  for (const sql::Params::Param& v : params.params()) {
    if (v.null) {
      p.AddNull(NullOid(v.type));
      continue;
    }
    switch (v.type) {
      case sql::Type::kInt:
        p.Add(v.i);
        break;
      case sql::Type::kBool:
        p.Add(v.i != 0);
        break;
      case sql::Type::kDouble:
      case sql::Type::kStored:
        p.Add(v.d);
        break;
      case sql::Type::kText:
        p.Add(v.s);
        break;
      case sql::Type::kBlob:
        p.AddBytes(v.s);
        break;
      case sql::Type::kJson:
        p.AddJsonb(v.s);
        break;
      case sql::Type::kIntArray:
        p.AddArray(v.ints);
        break;
      case sql::Type::kDoubleArray:
        p.AddArray(v.doubles);
        break;
      case sql::Type::kTextArray:
        p.AddTextArray(v.texts);
        break;
    }
  }
  return p;
}

}  // namespace

Result<PgResult> SqlConn::Run(std::string_view sql, const sql::Params& params,
                              sql::Prepare prepare) {
  const Params p = ToPg(params);
  return prepare == sql::Prepare::kCached ? conn_->Exec(sql, p) : conn_->ExecOnce(sql, p);
}

Result<std::unique_ptr<sql::Rows>> SqlConn::Query(std::string_view sql, const sql::Params& params,
                                                  sql::Prepare prepare) {
  COHORT_ASSIGN_OR_RETURN(PgResult res, Run(sql, params, prepare));
  return std::unique_ptr<sql::Rows>(new PgRows(std::move(res)));
}

Result<int64_t> SqlConn::Exec(std::string_view sql, const sql::Params& params,
                              sql::Prepare prepare) {
  COHORT_ASSIGN_OR_RETURN(PgResult res, Run(sql, params, prepare));
  return res.affected();
}

Status SqlConn::Scan(std::string_view sql, const std::function<Status(const sql::Row&)>& fn) {
  COHORT_RETURN_IF_ERROR(
      conn_->ExecOnce("DECLARE cohort_scan NO SCROLL CURSOR FOR " + std::string(sql)).status());
  while (true) {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res, conn_->ExecOnce("FETCH " + std::to_string(kScanRows) + " FROM cohort_scan"));
    if (res.rows() == 0) break;
    PgRows rows(std::move(res));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows.Next());
      if (!row) break;
      COHORT_RETURN_IF_ERROR(fn(rows));
    }
  }
  return conn_->ExecOnce("CLOSE cohort_scan").status();
}

}  // namespace cohort::store::pg
