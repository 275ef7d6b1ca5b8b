#include "store/sql/sql_conn.h"

namespace cohort::store::sql {

Status Conn::Scan(std::string_view sql, const std::function<Status(const Row&)>& fn) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Rows> rows, Query(sql, Params()));
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
    if (!row) return Status::Ok();
    COHORT_RETURN_IF_ERROR(fn(*rows));
  }
}

Result<int64_t> QueryInt(Conn& conn, std::string_view sql, const Params& params) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Rows> rows, conn.Query(sql, params));
  COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
  return row ? rows->Int(0) : int64_t{0};
}

}  // namespace cohort::store::sql
