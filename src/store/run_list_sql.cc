#include "store/run_list_sql.h"

namespace cohort::store {

Result<RunListPlan> PlanRunList(const RunQuery& query) {
  RunListPlan plan;
  COHORT_ASSIGN_OR_RETURN(plan.predicates, ParseFilters(query.filters));
  COHORT_ASSIGN_OR_RETURN(plan.sort, ParseRunSort(query.sort, &plan.sort_path));
  if (IsJsonSort(plan.sort)) plan.sort_path_text = query.sort.substr(query.sort.find('.') + 1);
  plan.descending = query.descending;
  if (!query.cursor.empty()) {
    COHORT_ASSIGN_OR_RETURN(plan.cursor, DecodeRunCursorFor(query.cursor, plan.sort,
                                                            query.descending, plan.sort_path_text));
  }
  plan.limit = query.limit > 0 ? query.limit : 100;
  return plan;
}

std::string RunSortExpr(RunSortField sort) {
  switch (sort) {
    case RunSortField::kCreated:
      return "r.created_ms";
    case RunSortField::kUpdated:
      return "r.updated_ms";
    case RunSortField::kName:
      return "r.name";
    case RunSortField::kState:
      return "r.state";
    case RunSortField::kGroup:
      return "r.grp";
    case RunSortField::kJobType:
      return "r.job_type";
    case RunSortField::kRuntime:
      return "(coalesce(r.finished_ms, greatest(r.heartbeat_ms, r.updated_ms)) - r.created_ms)";
    case RunSortField::kConfig:
    case RunSortField::kSummary:
      break;  // three expressions of the engine (RunJsonSortExprs)
  }
  return "r.created_ms";
}

const char* RunFilterColumn(FilterField field) {
  switch (field) {
    case FilterField::kName:
      return "r.name";
    case FilterField::kGroup:
      return "r.grp";
    case FilterField::kJobType:
      return "r.job_type";
    case FilterField::kState:
      return "r.state";
    case FilterField::kHost:
      return "r.host";
    case FilterField::kCreated:
      return "r.created_ms";
    case FilterField::kUpdated:
      return "r.updated_ms";
    default:
      return nullptr;
  }
}

std::string RunCursorCondition(const std::string& key, bool descending,
                               const std::string& key_param, const std::string& pk_param) {
  return "(" + key + ", r.pk) " + (descending ? "<" : ">") + " (" + key_param + ", " + pk_param +
         ")";
}

std::string RunPageSql(const std::string& where, const std::string& key, bool descending,
                       const std::string& limit_param) {
  const char* dir = descending ? " DESC" : " ASC";
  return std::string("SELECT ") + kRunColumns + ", " + key + " FROM runs r WHERE " + where +
         " ORDER BY " + key + dir + ", r.pk" + dir + " LIMIT " + limit_param;
}

std::string RunJsonCursorCondition(const RunJsonSortExprs& key, bool descending,
                                   const std::string& cls_param, const std::string& number_param,
                                   const std::string& text_param, const std::string& pk_param) {
  return "(" + key.cls + " > " + cls_param + " OR (" + key.cls + " = " + cls_param + " AND (" +
         key.number + ", " + key.text + ", r.pk) " + (descending ? "<" : ">") + " (" +
         number_param + ", " + text_param + ", " + pk_param + ")))";
}

std::string RunJsonPageSql(const std::string& where, const RunJsonSortExprs& key, bool descending,
                           const std::string& limit_param) {
  const char* dir = descending ? " DESC" : " ASC";
  return std::string("SELECT ") + kRunColumns + ", " + key.cls + ", " + key.number + ", " +
         key.text + " FROM runs r WHERE " + where + " ORDER BY " + key.cls + " ASC, " + key.number +
         dir + ", " + key.text + dir + ", r.pk" + dir + " LIMIT " + limit_param;
}

const char* const kListGroupsSql =
    "SELECT grp, state, job_type, count(*), min(created_ms), max(updated_ms) FROM runs "
    "WHERE entity = $1 AND project = $2 AND grp <> '' GROUP BY grp, state, job_type "
    "ORDER BY grp";

const char* const kListProjectsSql =
    "SELECT project, count(*), min(created_ms), max(updated_ms) FROM runs WHERE entity = $1 "
    "GROUP BY project ORDER BY project";

}  // namespace cohort::store
