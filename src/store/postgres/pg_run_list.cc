// PostgresStore: listing runs (filters, sort, keyset pagination), groups and projects. Filters
// mean what they mean on SQLite (sqlite_run_list.cc); the config/summary comparisons use the
// cohort_json_* SQL functions of the schema (pg_schema.cc).
#include <variant>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"
#include "store/run_filter.h"

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
      return "r.name";
  }
}

void AddTextColumn(const RunPredicate& p, Where* w) {
  const std::string col = ColumnOf(p.field);
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
      return "(coalesce(r.finished_ms, greatest(r.heartbeat_ms, r.updated_ms)) - r.created_ms)";
  }
  return "r.created_ms";
}

}  // namespace

Result<RunPage> PostgresStore::ListRuns(const RunQuery& query) {
  COHORT_ASSIGN_OR_RETURN(std::vector<RunPredicate> preds, ParseFilters(query.filters));
  COHORT_ASSIGN_OR_RETURN(RunSortField sort, ParseRunSort(query.sort));
  std::optional<RunCursor> cursor;
  if (!query.cursor.empty()) {
    COHORT_ASSIGN_OR_RETURN(cursor, DecodeRunCursorFor(query.cursor, sort, query.descending));
  }
  const int64_t limit = query.limit > 0 ? query.limit : 100;

  Where where;
  where.And("r.entity = " + where.Param(query.entity));
  where.And("r.project = " + where.Param(query.project));
  for (const RunPredicate& p : preds) {
    if (p.field == FilterField::kTag) {
      AddTag(p, &where);
    } else if (p.field == FilterField::kConfig || p.field == FilterField::kSummary) {
      AddJson(p, &where);
    } else {
      AddTextColumn(p, &where);
    }
  }
  const std::string count_sql = "SELECT count(*) FROM runs r WHERE " + where.sql();
  const Params count_params = where.params();

  const std::string key = SortExpr(sort);
  const char* dir = query.descending ? " DESC" : " ASC";
  if (cursor) {
    std::string key_param;
    if (const int64_t* i = std::get_if<int64_t>(&cursor->key)) {
      key_param = where.Param(*i);
    } else {
      key_param = where.Param(std::get<std::string>(cursor->key));
    }
    where.And("(" + key + ", r.pk) " + (query.descending ? "<" : ">") + " (" + key_param + ", " +
              where.Param(cursor->pk) + ")");
  }
  const std::string limit_param = where.Param(limit + 1);
  const std::string sql = std::string("SELECT ") + pg::kRunColumns + ", " + key +
                          " FROM runs r WHERE " + where.sql() + " ORDER BY " + key + dir +
                          ", r.pk" + dir + " LIMIT " + limit_param;

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<RunPage> {
    RunPage page;
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->ExecOnce(sql, where.params()));
    for (int i = 0; i < res.rows(); ++i) {
      if (int64_t(page.runs.size()) == limit) {  // a further row exists: hand out a cursor
        const RunRecord& last = page.runs.back();
        RunCursor next;
        next.sort = sort;
        next.descending = query.descending;
        next.pk = last.pk;
        if (SortKeyIsInteger(sort)) {
          next.key = res.Int(i - 1, pg::kRunColumnCount);
        } else {
          next.key = res.Text(i - 1, pg::kRunColumnCount);
        }
        page.next_cursor = EncodeRunCursor(next);
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
  Params p;
  p.Add(entity).Add(project);
  return ReadReplica(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<GroupInfo>> {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("SELECT grp, state, job_type, count(*), min(created_ms), max(updated_ms) "
                "FROM runs WHERE entity = $1 AND project = $2 AND grp <> '' "
                "GROUP BY grp, state, job_type ORDER BY grp",
                p));
    std::vector<GroupInfo> out;
    for (int i = 0; i < res.rows(); ++i) {
      std::string group = res.Text(i, 0);
      if (out.empty() || out.back().group != group) {
        GroupInfo g;
        g.group = std::move(group);
        g.created_ms = res.Int(i, 4);
        g.updated_ms = res.Int(i, 5);
        out.push_back(std::move(g));
      }
      GroupInfo& g = out.back();
      const int64_t n = res.Int(i, 3);
      g.runs += n;
      g.states[res.Text(i, 1)] += n;
      if (std::string job_type = res.Text(i, 2); !job_type.empty()) g.job_types[job_type] += n;
      g.created_ms = std::min(g.created_ms, res.Int(i, 4));
      g.updated_ms = std::max(g.updated_ms, res.Int(i, 5));
    }
    return out;
  });
}

Result<std::vector<ProjectInfo>> PostgresStore::ListProjects(const std::string& entity) {
  Params p;
  p.Add(entity);
  return ReadReplica(pg::TxnMode::kAutocommit, [&](Conn* c) -> Result<std::vector<ProjectInfo>> {
    COHORT_ASSIGN_OR_RETURN(
        PgResult res,
        c->Exec("SELECT project, count(*), min(created_ms), max(updated_ms) FROM runs "
                "WHERE entity = $1 GROUP BY project ORDER BY project",
                p));
    std::vector<ProjectInfo> out;
    for (int i = 0; i < res.rows(); ++i) {
      ProjectInfo info;
      info.entity = entity;
      info.project = res.Text(i, 0);
      info.runs = res.Int(i, 1);
      info.created_ms = res.Int(i, 2);
      info.updated_ms = res.Int(i, 3);
      out.push_back(std::move(info));
    }
    return out;
  });
}

}  // namespace cohort::store
