// What listing runs, groups and projects (Store::ListRuns, ListGroups, ListProjects) is in both
// SQL backends: reading the query into a plan (filters, sort, cursor, page size), the sort
// expressions and filter columns over `runs r`, the statements of a page, of the groups and of
// the projects, and the readers of their rows. The shared store (sql/sql_store.h) adds the filter
// clauses (each engine its own for tags and JSON) and runs the statements, which are written in
// the shared syntax of sql/sql_conn.h. The readers are templates over a row accessor
// (store/sql/sql_rows.h). Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "store/run_filter.h"
#include "store/run_types.h"
#include "store/sql/sql_rows.h"

namespace cohort::store {

// A RunQuery read and checked.
struct RunListPlan {
  std::vector<RunPredicate> predicates;
  RunSortField sort = RunSortField::kCreated;
  std::vector<std::string> sort_path;  // config./summary. sorts: the key's segments
  std::string sort_path_text;          // and as given ("val.loss"), for the cursor
  bool descending = true;
  std::optional<RunCursor> cursor;  // the page starts after it
  int64_t limit = 100;              // runs per page
};

// InvalidArgument naming the filter, sort or cursor at fault.
Result<RunListPlan> PlanRunList(const RunQuery& query);

// The SQL expression that a sort field orders by (not a JSON sort: IsJsonSort).
std::string RunSortExpr(RunSortField sort);
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

// A config./summary. sort (IsJsonSort) orders by three SQL expressions over `runs r` that each
// engine writes (SqlStore::JsonSortExprs): the class (an integer, JsonSortClass), the number
// (a double, 0 unless kNumber) and the text (0-byte order, '' unless kText). The class ascends in
// both directions; number, text and r.pk follow the direction.
struct RunJsonSortExprs {
  std::string cls, number, text;
};
// The condition that keeps the rows after the cursor (parameters of its class, number, text, pk).
std::string RunJsonCursorCondition(const RunJsonSortExprs& key, bool descending,
                                   const std::string& cls_param, const std::string& number_param,
                                   const std::string& text_param, const std::string& pk_param);
// RunPageSql for a JSON sort: kRunColumns and then the class, number and text of every run.
std::string RunJsonPageSql(const std::string& where, const RunJsonSortExprs& key, bool descending,
                           const std::string& limit_param);

// The cursor after a row of RunPageSql (RunJsonPageSql): its pk and sort key.
template <typename Row>
RunCursor RunCursorOfRow(const RunListPlan& plan, const Row& row) {
  RunCursor c;
  c.sort = plan.sort;
  c.descending = plan.descending;
  c.pk = row.Int(0);
  if (IsJsonSort(plan.sort)) {
    c.path = plan.sort_path_text;
    RunJsonSortKey j;
    j.cls = static_cast<JsonSortClass>(
        std::clamp<int64_t>(row.Int(kRunColumnCount), 0, int64_t(JsonSortClass::kMissing)));
    if (j.cls == JsonSortClass::kNumber) j.number = row.Double(kRunColumnCount + 1);
    if (j.cls == JsonSortClass::kText) j.text = row.Text(kRunColumnCount + 2);
    c.key = std::move(j);
  } else if (SortKeyIsInteger(plan.sort)) {
    c.key = row.Int(kRunColumnCount);
  } else {
    c.key = row.Text(kRunColumnCount);
  }
  return c;
}

// The rows of every (group, state, job type) of a project's runs in group order; parameters
// entity and project. FoldGroupRow adds one to the list of groups.
extern const char* const kListGroupsSql;
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
extern const char* const kListProjectsSql;
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
