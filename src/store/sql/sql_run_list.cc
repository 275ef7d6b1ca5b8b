// SqlStore: listing runs (filters, sort, keyset pagination), groups and projects. The clauses of
// the plain fields are shared; each engine adds those on tags and JSON documents.
#include <variant>

#include "store/run_filter.h"
#include "store/run_list_sql.h"
#include "store/sql/sql_rows.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

std::vector<std::string> Texts(const std::vector<FilterValue>& values) {
  std::vector<std::string> out;
  for (const FilterValue& v : values) out.push_back(v.text);
  return out;
}

// The condition of a filter on a plain field: text (name, group, job type, state, host) or a
// time in milliseconds (created, updated: ParseFilter allows ==, !=, <, > with a number only).
std::string ColumnCondition(const RunPredicate& p, Params* params) {
  const std::string col = RunFilterColumn(p.field);
  if (IsTimeField(p.field)) {
    params->Add(int64_t(*p.values[0].number));
    const char* cmp = p.op == FilterOp::kEq   ? " = "
                      : p.op == FilterOp::kNe ? " <> "
                      : p.op == FilterOp::kLt ? " < "
                                              : " > ";
    return col + cmp + params->Last();
  }
  if (p.op == FilterOp::kIn || p.op == FilterOp::kNotIn) {
    params->AddTextArray(Texts(p.values));
    return col + (p.op == FilterOp::kIn ? " = ANY(" : " <> ALL(") + params->Last() + ")";
  }
  params->Add(p.values[0].text);
  const std::string v = params->Last();
  switch (p.op) {
    case FilterOp::kEq:
      return col + " = " + v;
    case FilterOp::kNe:
      return col + " <> " + v;
    case FilterOp::kLt:
      return col + " < " + v;
    case FilterOp::kGt:
      return col + " > " + v;
    default:  // kContains
      return "strpos(" + col + ", " + v + ") > 0";
  }
}

}  // namespace

Result<RunPage> SqlStore::ListRuns(const RunQuery& query) {
  COHORT_ASSIGN_OR_RETURN(RunListPlan plan, PlanRunList(query));

  Params params;
  params.Add(query.entity).Add(query.project);
  std::string where = "r.entity = $1 AND r.project = $2";
  for (const RunPredicate& p : plan.predicates) {
    where += " AND ";
    if (p.field == FilterField::kTag) {
      where += RunTagCondition(p, &params);
    } else if (p.field == FilterField::kConfig || p.field == FilterField::kSummary) {
      where += RunJsonCondition(p, &params);
    } else {
      where += ColumnCondition(p, &params);
    }
  }
  const std::string count_sql = "SELECT count(*) FROM runs r WHERE " + where;
  const Params count_params = params;

  std::string sql;
  if (IsJsonSort(plan.sort)) {
    const RunJsonSortExprs key = JsonSortExprs(plan.sort, plan.sort_path, &params);
    if (const std::optional<RunCursor>& cursor = plan.cursor) {
      const RunJsonSortKey& j = std::get<RunJsonSortKey>(cursor->key);
      params.Add(int64_t(j.cls));
      const std::string cls_param = params.Last();
      params.Add(j.number);
      const std::string number_param = params.Last();
      params.Add(j.text);
      const std::string text_param = params.Last();
      params.Add(cursor->pk);
      where += " AND " + RunJsonCursorCondition(key, plan.descending, cls_param, number_param,
                                                text_param, params.Last());
    }
    params.Add(plan.limit + 1);
    sql = RunJsonPageSql(where, key, plan.descending, params.Last());
  } else {
    const std::string key = RunSortExpr(plan.sort);
    if (const std::optional<RunCursor>& cursor = plan.cursor) {
      if (const int64_t* i = std::get_if<int64_t>(&cursor->key)) {
        params.Add(*i);
      } else {
        params.Add(std::get<std::string>(cursor->key));
      }
      const std::string key_param = params.Last();
      params.Add(cursor->pk);
      where += " AND " + RunCursorCondition(key, plan.descending, key_param, params.Last());
    }
    params.Add(plan.limit + 1);
    sql = RunPageSql(where, key, plan.descending, params.Last());
  }

  return RunFor<RunPage>(Access::kReadAny, [&](Conn& conn) -> Result<RunPage> {
    RunPage page;
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                            conn.Query(sql, params, sql::Prepare::kOnce));
    RunCursor last;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      if (int64_t(page.runs.size()) == plan.limit) {  // a further row exists: hand out a cursor
        page.next_cursor = EncodeRunCursor(last);
        break;
      }
      page.runs.push_back(ReadRunRow(*rows));
      last = RunCursorOfRow(plan, *rows);
    }
    rows.reset();
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> count,
                            conn.Query(count_sql, count_params, sql::Prepare::kOnce));
    COHORT_ASSIGN_OR_RETURN(bool row, count->Next());
    page.total = row ? count->Int(0) : 0;
    return page;
  });
}

Result<std::vector<GroupInfo>> SqlStore::ListGroups(const std::string& entity,
                                                    const std::string& project) {
  using Out = std::vector<GroupInfo>;
  return RunFor<Out>(Access::kReadOneAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                            conn.Query(kListGroupsSql, Params().Add(entity).Add(project)));
    Out out;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) return out;
      FoldGroupRow(*rows, &out);
    }
  });
}

Result<std::vector<ProjectInfo>> SqlStore::ListProjects(const std::string& entity) {
  using Out = std::vector<ProjectInfo>;
  return RunFor<Out>(Access::kReadOneAny, [&](Conn& conn) {
    return sql::QueryAll<ProjectInfo>(conn, kListProjectsSql, Params().Add(entity),
                                      [&](const Row& row) { return ReadProjectRow(entity, row); });
  });
}

}  // namespace cohort::store
