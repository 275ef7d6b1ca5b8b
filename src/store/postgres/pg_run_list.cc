// PostgresStore: listing runs (filters, sort, keyset pagination), groups and projects. Filters
// mean what they mean on SQLite (sqlite_run_list.cc); the config/summary comparisons use the
// cohort_json_* SQL functions of the schema (pg_schema.cc).
#include <variant>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"
#include "store/run_filter.h"
#include "store/run_list_sql.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

// A WHERE clause under construction with its numbered parameters.
class Where {
 public:
  void And(const std::string& clause) {
    sql_ += sql_.empty() ? "" : " AND ";
    sql_ += clause;
  }
  // Adds a parameter, returns its placeholder ("$3").
  template <typename T>
  std::string Param(const T& v) {
    params_.Add(v);
    return "$" + std::to_string(params_.size());
  }
  std::string TextArray(const std::vector<std::string>& v) {
    params_.AddTextArray(v);
    return "$" + std::to_string(params_.size());
  }
  std::string DoubleArray(const std::vector<double>& v) {
    params_.AddArray(v);
    return "$" + std::to_string(params_.size());
  }
  const std::string& sql() const { return sql_; }
  const Params& params() const { return params_; }

 private:
  std::string sql_;
  Params params_;
};

std::vector<std::string> Texts(const std::vector<FilterValue>& values) {
  std::vector<std::string> out;
  for (const FilterValue& v : values) out.push_back(v.text);
  return out;
}

std::vector<double> Numbers(const std::vector<FilterValue>& values) {
  std::vector<double> out;
  for (const FilterValue& v : values) {
    if (v.number) out.push_back(*v.number);
  }
  return out;
}

void AddTextColumn(const RunPredicate& p, Where* w) {
  const std::string col = RunFilterColumn(p.field);
  if (IsTimeField(p.field)) {  // ParseFilter allows ==, !=, <, > only
    const char* cmp = p.op == FilterOp::kEq   ? " = "
                      : p.op == FilterOp::kNe ? " <> "
                      : p.op == FilterOp::kLt ? " < "
                                              : " > ";
    w->And(col + cmp + w->Param(int64_t(*p.values[0].number)));
    return;
  }
  switch (p.op) {
    case FilterOp::kEq:
      w->And(col + " = " + w->Param(p.values[0].text));
      return;
    case FilterOp::kNe:
      w->And(col + " <> " + w->Param(p.values[0].text));
      return;
    case FilterOp::kLt:
      w->And(col + " < " + w->Param(p.values[0].text));
      return;
    case FilterOp::kGt:
      w->And(col + " > " + w->Param(p.values[0].text));
      return;
    case FilterOp::kContains:
      w->And("strpos(" + col + ", " + w->Param(p.values[0].text) + ") > 0");
      return;
    case FilterOp::kIn:
      w->And(col + " = ANY(" + w->TextArray(Texts(p.values)) + ")");
      return;
    case FilterOp::kNotIn:
      w->And(col + " <> ALL(" + w->TextArray(Texts(p.values)) + ")");
      return;
  }
}

// tags is a jsonb array of strings: `?` tests for an element, `?|` for any of several.
void AddTag(const RunPredicate& p, Where* w) {
  switch (p.op) {
    case FilterOp::kEq:
      w->And("r.tags ? " + w->Param(p.values[0].text));
      return;
    case FilterOp::kNe:
      w->And("NOT (r.tags ? " + w->Param(p.values[0].text) + ")");
      return;
    case FilterOp::kContains:
      w->And("EXISTS (SELECT 1 FROM jsonb_array_elements_text(r.tags) t(v) WHERE strpos(t.v, " +
             w->Param(p.values[0].text) + ") > 0)");
      return;
    case FilterOp::kIn:
      w->And("r.tags ?| " + w->TextArray(Texts(p.values)));
      return;
    case FilterOp::kNotIn:
      w->And("NOT (r.tags ?| " + w->TextArray(Texts(p.values)) + ")");
      return;
    default:
      return;  // rejected by ParseFilter
  }
}

// config.<key> / summary.<key>. Runs without the key match != and not in, and nothing else.
void AddJson(const RunPredicate& p, Where* w) {
  const std::string doc = p.field == FilterField::kConfig ? "r.config_doc" : "r.summary_doc";
  const std::string v = "(" + doc + " #> " + w->TextArray(p.path) + ")";
  auto match_any = [&] {
    // Numbers compare as numbers, every operand also as text (a value logged as "1" or 1).
    return "coalesce(cohort_json_num(" + v + ") = ANY(" + w->DoubleArray(Numbers(p.values)) +
           ") OR cohort_json_str(" + v + ") = ANY(" + w->TextArray(Texts(p.values)) + "), false)";
  };
  switch (p.op) {
    case FilterOp::kEq:
    case FilterOp::kIn:
      w->And(match_any());
      return;
    case FilterOp::kNe:
    case FilterOp::kNotIn:
      w->And("NOT " + match_any());
      return;
    case FilterOp::kContains:
      w->And("strpos(cohort_json_cast_text(" + v + "), " + w->Param(p.values[0].text) + ") > 0");
      return;
    case FilterOp::kLt:
    case FilterOp::kGt: {
      const char* cmp = p.op == FilterOp::kLt ? " < " : " > ";
      const FilterValue& value = p.values[0];
      if (value.number) {
        w->And("cohort_json_num(" + v + ")" + cmp + w->Param(*value.number));
      } else {
        w->And("(jsonb_typeof(" + v + ") = 'string' AND (" + v + " #>> '{}') COLLATE \"C\"" + cmp +
               w->Param(value.text) + ")");
      }
      return;
    }
  }
}

}  // namespace

Result<RunPage> PostgresStore::ListRuns(const RunQuery& query) {
  COHORT_ASSIGN_OR_RETURN(RunListPlan plan, PlanRunList(query));

  Where where;
  where.And("r.entity = " + where.Param(query.entity));
  where.And("r.project = " + where.Param(query.project));
  AddRunPredicates(plan, &where, AddTag, AddJson, AddTextColumn);
  const std::string count_sql = "SELECT count(*) FROM runs r WHERE " + where.sql();
  const Params count_params = where.params();

  const std::string key = RunSortExpr(plan.sort, kPostgresDialect);
  if (const std::optional<RunCursor>& cursor = plan.cursor) {
    std::string key_param;
    if (const int64_t* i = std::get_if<int64_t>(&cursor->key)) {
      key_param = where.Param(*i);
    } else {
      key_param = where.Param(std::get<std::string>(cursor->key));
    }
    const std::string pk_param = where.Param(cursor->pk);
    where.And(RunCursorCondition(key, plan.descending, key_param, pk_param));
  }
  const std::string limit_param = where.Param(plan.limit + 1);
  const std::string sql = RunPageSql(where.sql(), key, plan.descending, limit_param);

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<RunPage> {
    RunPage page;
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->ExecOnce(sql, where.params()));
    for (int i = 0; i < res.rows(); ++i) {
      if (int64_t(page.runs.size()) == plan.limit) {  // a further row exists: hand out a cursor
        page.next_cursor = EncodeRunCursor(RunCursorOfRow(plan, pg::PgRow(res, i - 1)));
        break;
      }
      page.runs.push_back(pg::ReadRun(res, i));
    }
    COHORT_ASSIGN_OR_RETURN(PgResult count, c->ExecOnce(count_sql, count_params));
    page.total = count.Int(0, 0);
    return page;
  });
}

Result<std::vector<GroupInfo>> PostgresStore::ListGroups(const std::string& entity,
                                                         const std::string& project) {
  static const std::string kSql = ListGroupsSql(kPostgresDialect);
  Params p;
  p.Add(entity).Add(project);
  return ReadReplica(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<GroupInfo>> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    std::vector<GroupInfo> out;
    for (int i = 0; i < res.rows(); ++i) FoldGroupRow(pg::PgRow(res, i), &out);
    return out;
  });
}

Result<std::vector<ProjectInfo>> PostgresStore::ListProjects(const std::string& entity) {
  static const std::string kSql = ListProjectsSql(kPostgresDialect);
  Params p;
  p.Add(entity);
  return ReadReplica(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<ProjectInfo>> {
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kSql, p));
    std::vector<ProjectInfo> out;
    for (int i = 0; i < res.rows(); ++i) out.push_back(ReadProjectRow(entity, pg::PgRow(res, i)));
    return out;
  });
}

}  // namespace cohort::store
