// SqliteStore: listing runs (filters, sort, keyset pagination), groups and projects.
#include <variant>

#include "store/run_filter.h"
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

const char* ColumnOf(FilterField f) {
  switch (f) {
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
    default:
      return nullptr;
  }
}

void AddTextColumn(const RunPredicate& p, Where* w) {
  const std::string col = ColumnOf(p.field);
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
  w->binds.emplace_back(p.values[0].text);
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

std::string SortExpr(RunSortField f) {
  switch (f) {
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
      return "(coalesce(r.finished_ms, max(r.heartbeat_ms, r.updated_ms)) - r.created_ms)";
  }
  return "r.created_ms";
}

void BindAll(Stmt* st, const std::vector<BindValue>& binds) {
  for (const BindValue& b : binds) {
    std::visit([st](const auto& v) { st->Bind(v); }, b);
  }
}

}  // namespace

Result<RunPage> SqliteStore::ListRuns(const RunQuery& query) {
  COHORT_ASSIGN_OR_RETURN(std::vector<RunPredicate> preds, ParseFilters(query.filters));
  COHORT_ASSIGN_OR_RETURN(RunSortField sort, ParseRunSort(query.sort));
  std::optional<RunCursor> cursor;
  if (!query.cursor.empty()) {
    COHORT_ASSIGN_OR_RETURN(cursor, DecodeRunCursorFor(query.cursor, sort, query.descending));
  }
  const int64_t limit = query.limit > 0 ? query.limit : 100;

  Where where;
  where.And("r.entity = ? AND r.project = ?");
  where.binds.emplace_back(query.entity);
  where.binds.emplace_back(query.project);
  for (const RunPredicate& p : preds) {
    if (p.field == FilterField::kTag) {
      AddTag(p, &where);
    } else if (p.field == FilterField::kConfig || p.field == FilterField::kSummary) {
      AddJson(p, &where);
    } else {
      AddTextColumn(p, &where);
    }
  }
  const std::string count_sql = "SELECT count(*) FROM runs r WHERE " + where.sql;
  const std::vector<BindValue> count_binds = where.binds;

  const std::string key = SortExpr(sort);
  const char* dir = query.descending ? " DESC" : " ASC";
  if (cursor) {
    where.And("(" + key + ", r.pk) " + (query.descending ? "<" : ">") + " (?, ?)");
    if (const int64_t* i = std::get_if<int64_t>(&cursor->key)) {
      where.binds.emplace_back(*i);
    } else {
      where.binds.emplace_back(std::get<std::string>(cursor->key));
    }
    where.binds.emplace_back(cursor->pk);
  }
  const std::string sql = std::string("SELECT ") + sqlite::kRunColumns + ", " + key +
                          " FROM runs r WHERE " + where.sql + " ORDER BY " + key + dir + ", r.pk" +
                          dir + " LIMIT ?";

  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  RunPage page;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare(sql));
    BindAll(&st, where.binds);
    st.Bind(limit + 1);
    RunCursor last;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      if (int64_t(page.runs.size()) == limit) {  // a further row exists: hand out a cursor
        page.next_cursor = EncodeRunCursor(last);
        break;
      }
      page.runs.push_back(sqlite::ReadRun(st));
      last.sort = sort;
      last.descending = query.descending;
      last.pk = page.runs.back().pk;
      if (SortKeyIsInteger(sort)) {
        last.key = st.Int(sqlite::kRunColumnCount);
      } else {
        last.key = st.Text(sqlite::kRunColumnCount);
      }
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
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT grp, state, job_type, count(*), min(created_ms), "
                          "max(updated_ms) FROM runs WHERE entity = ? AND project = ? AND "
                          "grp != '' GROUP BY grp, state, job_type ORDER BY grp"));
  st.Bind(entity).Bind(project);
  std::vector<GroupInfo> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string group = st.Text(0);
    if (out.empty() || out.back().group != group) {
      GroupInfo g;
      g.group = std::move(group);
      g.created_ms = st.Int(4);
      g.updated_ms = st.Int(5);
      out.push_back(std::move(g));
    }
    GroupInfo& g = out.back();
    const int64_t n = st.Int(3);
    g.runs += n;
    g.states[st.Text(1)] += n;
    if (std::string job_type = st.Text(2); !job_type.empty()) g.job_types[job_type] += n;
    g.created_ms = std::min(g.created_ms, st.Int(4));
    g.updated_ms = std::max(g.updated_ms, st.Int(5));
  }
  return out;
}

Result<std::vector<ProjectInfo>> SqliteStore::ListProjects(const std::string& entity) {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT project, count(*), min(created_ms), max(updated_ms) FROM runs "
                          "WHERE entity = ? GROUP BY project ORDER BY project"));
  st.Bind(entity);
  std::vector<ProjectInfo> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ProjectInfo p;
    p.entity = entity;
    p.project = st.Text(0);
    p.runs = st.Int(1);
    p.created_ms = st.Int(2);
    p.updated_ms = st.Int(3);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace cohort::store
