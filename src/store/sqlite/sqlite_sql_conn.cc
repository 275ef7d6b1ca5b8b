#include "store/sqlite/sqlite_sql_conn.h"

#include <boost/json.hpp>

#include "store/sql/sql_dialect.h"

namespace cohort::store::sqlite {
namespace {

namespace bj = boost::json;

// The rows of a statement, stepped as they are read.
class SqliteRows final : public sql::Rows {
 public:
  explicit SqliteRows(Stmt st) : st_(std::move(st)) {}
  Result<bool> Next() override { return st_.Step(); }
  bool IsNull(int col) const override { return st_.IsNull(col); }
  int64_t Int(int col) const override { return st_.Int(col); }
  double Double(int col) const override { return st_.Double(col); }
  std::string Text(int col) const override { return st_.Text(col); }
  std::string_view Bytes(int col) const override { return st_.BlobView(col); }

 private:
  Stmt st_;
};

template <typename T>
std::string JsonArray(const std::vector<T>& values) {
  bj::array a;
  a.reserve(values.size());
  for (const T& v : values) a.emplace_back(v);
  return bj::serialize(a);
}

void Bind(Stmt& st, const sql::Params::Param& p) {
  if (p.null) {
    st.BindNull();
    return;
  }
  switch (p.type) {
    case sql::Type::kInt:
    case sql::Type::kBool:
      st.Bind(p.i);
      return;
    case sql::Type::kDouble:
      st.Bind(p.d);
      return;
    case sql::Type::kStored:
      st.BindKeepingSign(p.d);
      return;
    case sql::Type::kText:
    case sql::Type::kJson:
      st.Bind(p.s);
      return;
    case sql::Type::kBlob:
      st.BindBlob(p.s);
      return;
    case sql::Type::kIntArray:
      st.Bind(JsonArray(p.ints));
      return;
    case sql::Type::kDoubleArray:
      st.Bind(JsonArray(p.doubles));
      return;
    case sql::Type::kTextArray:
      st.Bind(JsonArray(p.texts));
      return;
  }
}

}  // namespace

Result<Stmt> SqlConn::Bound(std::string_view sql, const sql::Params& params, sql::Prepare prepare) {
  Result<Stmt> st = prepare == sql::Prepare::kCached ? db_->CachedShared(sql)
                                                     : db_->Prepare(sql::RenderForSqlite(sql));
  if (!st.ok()) return st;
  for (const sql::Params::Param& p : params.params()) Bind(*st, p);
  return st;
}

Result<std::unique_ptr<sql::Rows>> SqlConn::Query(std::string_view sql, const sql::Params& params,
                                                  sql::Prepare prepare) {
  COHORT_ASSIGN_OR_RETURN(Stmt st, Bound(sql, params, prepare));
  return std::unique_ptr<sql::Rows>(new SqliteRows(std::move(st)));
}

Result<int64_t> SqlConn::Exec(std::string_view sql, const sql::Params& params,
                              sql::Prepare prepare) {
  COHORT_ASSIGN_OR_RETURN(Stmt st, Bound(sql, params, prepare));
  COHORT_RETURN_IF_ERROR(st.Run());
  return int64_t{db_->Changes()};
}

}  // namespace cohort::store::sqlite
