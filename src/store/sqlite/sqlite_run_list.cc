// SqliteStore: listing runs (filters, sort, keyset pagination), groups and projects.
#include <variant>

#include "store/run_filter.h"
#include "store/run_list_sql.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

using BindValue = std::variant<int64_t, double, std::string>;

// A WHERE clause under construction with its positional parameters.
struct Where {
  std::string sql;
  std::vector<BindValue> binds;

  void And(const std::string& clause) {
    sql += sql.empty() ? "" : " AND ";
    sql += clause;
  }
  // "?, ?, ?" for `values`, appended to binds; numbers bind both as number and text so that a
  // JSON value matches whether it was logged as 1 or "1".
  std::string List(const std::vector<FilterValue>& values, bool json) {
    std::string out;
    for (const FilterValue& v : values) {
      if (json && v.number) {
        out += out.empty() ? "?" : ", ?";
        binds.emplace_back(*v.number);
      }
      out += out.empty() ? "?" : ", ?";
      binds.emplace_back(v.text);
    }
    return out;
  }
};

void AddTextColumn(const RunPredicate& p, Where* w) {
  const std::string col = RunFilterColumn(p.field);
  switch (p.op) {
    case FilterOp::kEq:
      w->And(col + " = ?");
      break;
    case FilterOp::kNe:
      w->And(col + " != ?");
      break;
    case FilterOp::kLt:
      w->And(col + " < ?");
      break;
    case FilterOp::kGt:
      w->And(col + " > ?");
      break;
    case FilterOp::kContains:
      w->And("instr(" + col + ", ?) > 0");
      break;
    case FilterOp::kIn:
      w->And(col + " IN (" + w->List(p.values, false) + ")");
      return;
    case FilterOp::kNotIn:
      w->And(col + " NOT IN (" + w->List(p.values, false) + ")");
      return;
  }
  if (IsTimeField(p.field)) {
    w->binds.emplace_back(int64_t(*p.values[0].number));
  } else {
    w->binds.emplace_back(p.values[0].text);
  }
}

void AddTag(const RunPredicate& p, Where* w) {
  const std::string each = "(SELECT 1 FROM json_each(r.tags) WHERE ";
  switch (p.op) {
    case FilterOp::kEq:
      w->And("EXISTS " + each + "value = ?)");
      break;
    case FilterOp::kNe:
      w->And("NOT EXISTS " + each + "value = ?)");
      break;
    case FilterOp::kContains:
      w->And("EXISTS " + each + "instr(value, ?) > 0)");
      break;
    case FilterOp::kIn:
      w->And("EXISTS " + each + "value IN (" + w->List(p.values, false) + "))");
      return;
    case FilterOp::kNotIn:
      w->And("NOT EXISTS " + each + "value IN (" + w->List(p.values, false) + "))");
      return;
    default:
      return;  // rejected by ParseFilter
  }
  w->binds.emplace_back(p.values[0].text);
}

// config.<key> / summary.<key>: compares the extracted JSON value. Runs without the key match
// != and not in, and nothing else.
void AddJson(const RunPredicate& p, Where* w) {
  const std::string doc = p.field == FilterField::kConfig ? "r.config" : "r.summary";
  const std::string path = JsonPath(p.path);
  // Each reference to the value binds the path again.
  auto x = [&] {
    w->binds.emplace_back(path);
    return "json_extract(" + doc + ", ?)";
  };
  switch (p.op) {
    case FilterOp::kEq:
    case FilterOp::kIn: {
      std::string v = x();
      w->And("coalesce(" + v + " IN (" + w->List(p.values, true) + "), 0)");
      return;
    }
    case FilterOp::kNe:
    case FilterOp::kNotIn: {
      std::string v = x();
      w->And("NOT coalesce(" + v + " IN (" + w->List(p.values, true) + "), 0)");
      return;
    }
    case FilterOp::kContains:
      w->And("instr(CAST(" + x() + " AS TEXT), ?) > 0");
      w->binds.emplace_back(p.values[0].text);
      return;
    case FilterOp::kLt:
    case FilterOp::kGt: {
      const char* cmp = p.op == FilterOp::kLt ? " < ?" : " > ?";
      const FilterValue& v = p.values[0];
      std::string a = x();
      std::string b = x();
      if (v.number) {
        w->And("(typeof(" + a + ") IN ('integer', 'real') AND " + b + cmp + ")");
        w->binds.emplace_back(*v.number);
      } else {
        w->And("(typeof(" + a + ") = 'text' AND " + b + cmp + ")");
        w->binds.emplace_back(v.text);
      }
      return;
    }
  }
}

void BindAll(Stmt* st, const std::vector<BindValue>& binds) {
  for (const BindValue& b : binds) {
    std::visit([st](const auto& v) { st->Bind(v); }, b);
  }
}

}  // namespace

Result<RunPage> SqliteStore::ListRuns(const RunQuery& query) {
  COHORT_ASSIGN_OR_RETURN(RunListPlan plan, PlanRunList(query));

  Where where;
  where.And("r.entity = ? AND r.project = ?");
  where.binds.emplace_back(query.entity);
  where.binds.emplace_back(query.project);
  AddRunPredicates(plan, &where, AddTag, AddJson, AddTextColumn);
  const std::string count_sql = "SELECT count(*) FROM runs r WHERE " + where.sql;
  const std::vector<BindValue> count_binds = where.binds;

  const std::string key = RunSortExpr(plan.sort, kSqliteDialect);
  if (const std::optional<RunCursor>& cursor = plan.cursor) {
    where.And(RunCursorCondition(key, plan.descending, "?", "?"));
    if (const int64_t* i = std::get_if<int64_t>(&cursor->key)) {
      where.binds.emplace_back(*i);
    } else {
      where.binds.emplace_back(std::get<std::string>(cursor->key));
    }
    where.binds.emplace_back(cursor->pk);
  }
  const std::string sql = RunPageSql(where.sql, key, plan.descending, "?");

  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  RunPage page;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare(sql));
    BindAll(&st, where.binds);
    st.Bind(plan.limit + 1);
    RunCursor last;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      if (int64_t(page.runs.size()) == plan.limit) {  // a further row exists: hand out a cursor
        page.next_cursor = EncodeRunCursor(last);
        break;
      }
      page.runs.push_back(sqlite::ReadRun(st));
      last = RunCursorOfRow(plan, st);
    }
  }
  COHORT_ASSIGN_OR_RETURN(Stmt count, db->Prepare(count_sql));
  BindAll(&count, count_binds);
  COHORT_ASSIGN_OR_RETURN(bool row, count.Step());
  page.total = row ? count.Int(0) : 0;
  return page;
}

Result<std::vector<GroupInfo>> SqliteStore::ListGroups(const std::string& entity,
                                                       const std::string& project) {
  static const std::string kSql = ListGroupsSql(kSqliteDialect);
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(entity).Bind(project);
  std::vector<GroupInfo> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    FoldGroupRow(st, &out);
  }
  return out;
}

Result<std::vector<ProjectInfo>> SqliteStore::ListProjects(const std::string& entity) {
  static const std::string kSql = ListProjectsSql(kSqliteDialect);
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kSql));
  st.Bind(entity);
  std::vector<ProjectInfo> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadProjectRow(entity, st));
  }
  return out;
}

}  // namespace cohort::store
