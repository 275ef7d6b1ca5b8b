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

// The sort key of a config./summary. sort on the key `path` (run_list_sql.h RunJsonSortExprs),
// written for each engine so that both give the same order (run_filter.h JsonSortClass): SQLite
// reads the value with json_type/json_extract, PostgreSQL from the jsonb copy (texts compare
// byte-wise there too: COLLATE "C"). The strings "Infinity"/"-Infinity" are infinities and
// "NaN" its own class, as the API writes non-finite numbers.
RunJsonSortExprs JsonSortExprs(sql::Engine engine, RunSortField field,
                               const std::vector<std::string>& path, Params* params) {
  RunJsonSortExprs e;
  if (engine == sql::Engine::kSqlite) {
    params->Add(JsonPath(path));
    const std::string doc = field == RunSortField::kConfig ? "r.config" : "r.summary";
    const std::string t = "json_type(" + doc + ", " + params->Last() + ")";
    const std::string v = "json_extract(" + doc + ", " + params->Last() + ")";
    // Simple CASEs: each reads the value at most twice (json_type, then json_extract).
    e.cls = "(CASE " + t + " WHEN 'integer' THEN 0 WHEN 'real' THEN 0 WHEN 'true' THEN 0 " +
            "WHEN 'false' THEN 0 WHEN 'text' THEN (CASE " + v +
            " WHEN 'Infinity' THEN 0 WHEN '-Infinity' THEN 0 WHEN 'NaN' THEN 1 ELSE 2 END) " +
            "ELSE 3 END)";
    e.number = "(CASE " + t + " WHEN 'integer' THEN CAST(" + v + " AS REAL) WHEN 'real' THEN " + v +
               " WHEN 'true' THEN 1.0 WHEN 'text' THEN (CASE " + v +
               " WHEN 'Infinity' THEN 9e999 WHEN '-Infinity' THEN -9e999 ELSE 0.0 END) " +
               "ELSE 0.0 END)";
    e.text = "(CASE " + t + " WHEN 'text' THEN (CASE " + v +
             " WHEN 'Infinity' THEN '' WHEN '-Infinity' THEN '' WHEN 'NaN' THEN '' ELSE " + v +
             " END) ELSE '' END)";
    return e;
  }
  params->AddTextArray(path);
  const std::string doc = field == RunSortField::kConfig ? "r.config_doc" : "r.summary_doc";
  const std::string v = "(" + doc + " #> " + params->Last() + ")";
  const std::string t = "jsonb_typeof(" + v + ")";
  const std::string s = "(" + v + " #>> '{}')";
  e.cls = "(CASE WHEN " + t + " IN ('number', 'boolean') OR (" + t + " = 'string' AND " + s +
          " IN ('Infinity', '-Infinity')) THEN 0 WHEN " + t + " = 'string' AND " + s +
          " = 'NaN' THEN 1 WHEN " + t + " = 'string' THEN 2 ELSE 3 END)";
  e.number = "(CASE WHEN " + t + " IN ('number', 'boolean') THEN cohort_json_num(" + v + ") WHEN " +
             t + " = 'string' AND " + s + " = 'Infinity' THEN 'Infinity'::float8 " + "WHEN " + t +
             " = 'string' AND " + s + " = '-Infinity' THEN '-Infinity'::float8 ELSE 0::float8 END)";
  e.text = "(CASE WHEN " + t + " = 'string' AND " + s +
           " NOT IN ('Infinity', '-Infinity', 'NaN') THEN " + s + " ELSE '' END COLLATE \"C\")";
  return e;
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
    const RunJsonSortExprs key = JsonSortExprs(engine(), plan.sort, plan.sort_path, &params);
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
