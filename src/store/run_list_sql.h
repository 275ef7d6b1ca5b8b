// What listing runs, groups and projects (Store::ListRuns, ListGroups, ListProjects) is in both
// SQL backends: reading the query into a plan (filters, sort, cursor, page size), the sort
// expressions and filter columns over `runs r`, the statements of a page, of the groups and of
// the projects, and the readers of their rows. Each backend adds its own filter clauses (tags and
// JSON differ) and runs the statements. The statements are written for `dialect`, which says how
// the two SQL dialects differ where these statements meet them. The readers are templates over
// the backend's row accessor (store/sql_rows.h). Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "store/run_filter.h"
#include "store/run_types.h"
#include "store/sql_rows.h"

namespace cohort::store {

// Where the SQL of SQLite and PostgreSQL differs in these statements.
struct SqlDialect {
  bool numbered_params;  // "$1, $2" (PostgreSQL) rather than "?" (SQLite)
  const char* greatest;  // the two-argument maximum: "max" (SQLite), "greatest" (PostgreSQL)

  // The placeholder of the n-th parameter (from 1).
  std::string Param(int n) const;
};
inline constexpr SqlDialect kSqliteDialect{false, "max"};
inline constexpr SqlDialect kPostgresDialect{true, "greatest"};

// A RunQuery read and checked.
struct RunListPlan {
  std::vector<RunPredicate> predicates;
  RunSortField sort = RunSortField::kCreated;
  bool descending = true;
  std::optional<RunCursor> cursor;  // the page starts after it
  int64_t limit = 100;              // runs per page
};

// InvalidArgument naming the filter, sort or cursor at fault.
Result<RunListPlan> PlanRunList(const RunQuery& query);

// Adds a clause for every predicate to `where` with the backend's builders: `tag` for tags,
// `json` for config and summary keys, `text` for the plain text fields. Each is called as
// fn(predicate, where).
template <typename Where, typename TagFn, typename JsonFn, typename TextFn>
void AddRunPredicates(const RunListPlan& plan, Where* where, TagFn tag, JsonFn json, TextFn text) {
  for (const RunPredicate& p : plan.predicates) {
    if (p.field == FilterField::kTag) {
      tag(p, where);
    } else if (p.field == FilterField::kConfig || p.field == FilterField::kSummary) {
      json(p, where);
    } else {
      text(p, where);
    }
  }
}

// The SQL expression that a sort field orders by.
std::string RunSortExpr(RunSortField sort, const SqlDialect& dialect);
// The column of a filter on a plain field (name, group, job type, state, host as text; created,
// updated as integers, IsTimeField); nullptr for tag, config and summary.
const char* RunFilterColumn(FilterField field);

// The condition that keeps the rows after the cursor: (key, r.pk) after (key_param, pk_param).
std::string RunCursorCondition(const std::string& key, bool descending,
                               const std::string& key_param, const std::string& pk_param);
// The statement of one page: kRunColumns and then the sort key of every run that matches
// `where`, in sort order, at most the parameter `limit_param` of them.
std::string RunPageSql(const std::string& where, const std::string& key, bool descending,
                       const std::string& limit_param);

// The cursor after a row of RunPageSql: its pk and sort key.
template <typename Row>
RunCursor RunCursorOfRow(const RunListPlan& plan, const Row& row) {
  RunCursor c;
  c.sort = plan.sort;
  c.descending = plan.descending;
  c.pk = row.Int(0);
  if (SortKeyIsInteger(plan.sort)) {
    c.key = row.Int(kRunColumnCount);
  } else {
    c.key = row.Text(kRunColumnCount);
  }
  return c;
}

// The rows of every (group, state, job type) of a project's runs in group order; parameters
// entity and project. FoldGroupRow adds one to the list of groups.
std::string ListGroupsSql(const SqlDialect& dialect);
template <typename Row>
void FoldGroupRow(const Row& row, std::vector<GroupInfo>* out) {
  std::string group = row.Text(0);
  if (out->empty() || out->back().group != group) {
    GroupInfo g;
    g.group = std::move(group);
    g.created_ms = row.Int(4);
    g.updated_ms = row.Int(5);
    out->push_back(std::move(g));
  }
  GroupInfo& g = out->back();
  const int64_t n = row.Int(3);
  g.runs += n;
  g.states[row.Text(1)] += n;
  if (std::string job_type = row.Text(2); !job_type.empty()) g.job_types[job_type] += n;
  g.created_ms = std::min(g.created_ms, row.Int(4));
  g.updated_ms = std::max(g.updated_ms, row.Int(5));
}

// The rows of every project of an entity in name order; parameter entity.
std::string ListProjectsSql(const SqlDialect& dialect);
template <typename Row>
ProjectInfo ReadProjectRow(const std::string& entity, const Row& row) {
  ProjectInfo p;
  p.entity = entity;
  p.project = row.Text(0);
  p.runs = row.Int(1);
  p.created_ms = row.Int(2);
  p.updated_ms = row.Int(3);
  return p;
}

}  // namespace cohort::store
