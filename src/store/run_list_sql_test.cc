#include "store/run_list_sql.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "store/memory_row_for_test.h"

namespace cohort::store {
namespace {

using MemoryRow = testing_rows::MemoryRow;

TEST(RunListSqlTest, StatementsAreWrittenInTheSharedSyntax) {
  EXPECT_EQ(std::string(kListProjectsSql),
            "SELECT project, count(*), min(created_ms), max(updated_ms) FROM runs WHERE entity = "
            "$1 GROUP BY project ORDER BY project");
  EXPECT_NE(std::string(kListGroupsSql).find("entity = $1 AND project = $2"), std::string::npos);
  EXPECT_EQ(RunSortExpr(RunSortField::kRuntime),
            "(coalesce(r.finished_ms, greatest(r.heartbeat_ms, r.updated_ms)) - r.created_ms)");
  EXPECT_EQ(RunSortExpr(RunSortField::kGroup), "r.grp");
}

TEST(RunListSqlTest, PageSqlOrdersByKeyThenPkInOneDirection) {
  EXPECT_EQ(RunCursorCondition("r.name", /*descending=*/true, "$3", "$4"),
            "(r.name, r.pk) < ($3, $4)");
  const std::string sql = RunPageSql("r.entity = $1", "r.name", /*descending=*/false, "$2");
  EXPECT_NE(sql.find(std::string("SELECT ") + kRunColumns +
                     ", r.name FROM runs r WHERE "
                     "r.entity = $1 ORDER BY r.name ASC, "
                     "r.pk ASC LIMIT $2"),
            std::string::npos)
      << sql;
}

TEST(RunListSqlTest, PlanRejectsACursorMadeForAnotherSort) {
  RunCursor c;
  c.sort = RunSortField::kName;
  c.key = std::string("a");
  RunQuery query;
  query.sort = "created";
  query.cursor = EncodeRunCursor(c);
  auto plan = PlanRunList(query);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
}

TEST(RunListSqlTest, PlanDefaultsThePageSizeTo100) {
  RunQuery query;
  query.limit = 0;
  auto plan = PlanRunList(query);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->limit, 100);
  EXPECT_EQ(plan->sort, RunSortField::kCreated);
  EXPECT_FALSE(plan->cursor.has_value());
}

TEST(RunListSqlTest, CursorOfARowTakesItsPkAndTextSortKey) {
  RunListPlan plan;
  plan.sort = RunSortField::kName;
  plan.descending = false;
  std::vector<MemoryRow::Cell> cells(kRunColumnCount + 1);
  cells[0] = int64_t{42};
  cells[kRunColumnCount] = std::string("run-b");
  RunCursor c = RunCursorOfRow(plan, MemoryRow(cells));
  EXPECT_EQ(c.pk, 42);
  EXPECT_EQ(std::get<std::string>(c.key), "run-b");
  EXPECT_EQ(c.sort, RunSortField::kName);
  EXPECT_FALSE(c.descending);
}

TEST(RunListSqlTest, GroupRowsOfOneGroupFoldIntoOneGroup) {
  std::vector<GroupInfo> groups;
  using S = std::string;
  FoldGroupRow(MemoryRow({S("g1"), S("running"), S("train"), int64_t{2}, int64_t{10}, int64_t{50}}),
               &groups);
  FoldGroupRow(MemoryRow({S("g1"), S("finished"), S(""), int64_t{3}, int64_t{5}, int64_t{40}}),
               &groups);
  FoldGroupRow(MemoryRow({S("g2"), S("failed"), S("eval"), int64_t{1}, int64_t{7}, int64_t{8}}),
               &groups);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].group, "g1");
  EXPECT_EQ(groups[0].runs, 5);
  EXPECT_EQ(groups[0].states.at("running"), 2);
  EXPECT_EQ(groups[0].states.at("finished"), 3);
  EXPECT_EQ(groups[0].job_types.size(), 1u);  // an empty job type is not counted
  EXPECT_EQ(groups[0].job_types.at("train"), 2);
  EXPECT_EQ(groups[0].created_ms, 5);
  EXPECT_EQ(groups[0].updated_ms, 50);
  EXPECT_EQ(groups[1].group, "g2");
  EXPECT_EQ(groups[1].runs, 1);
}

}  // namespace
}  // namespace cohort::store
