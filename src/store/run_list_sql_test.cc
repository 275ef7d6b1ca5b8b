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

TEST(RunListSqlTest, JsonSortKeepsClassAscendingAndTheRestInTheDirection) {
  const RunJsonSortExprs key{"C", "N", "T"};
  EXPECT_EQ(RunJsonCursorCondition(key, /*descending=*/true, "$3", "$4", "$5", "$6"),
            "(C > $3 OR (C = $3 AND (N, T, r.pk) < ($4, $5, $6)))");
  const std::string sql = RunJsonPageSql("w", key, /*descending=*/true, "$7");
  EXPECT_NE(sql.find(std::string(kRunColumns) +
                     ", C, N, T FROM runs r WHERE w ORDER BY C ASC, N DESC, T DESC, r.pk DESC "
                     "LIMIT $7"),
            std::string::npos)
      << sql;
}

TEST(RunListSqlTest, PlanReadsAJsonSortAndItsCursor) {
  RunQuery query;
  query.sort = "summary.val.loss";
  query.descending = false;
  auto plan = PlanRunList(query);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->sort, RunSortField::kSummary);
  EXPECT_EQ(plan->sort_path, (std::vector<std::string>{"val", "loss"}));
  EXPECT_EQ(plan->sort_path_text, "val.loss");
  std::vector<MemoryRow::Cell> cells(kRunColumnCount + 3, int64_t{0});
  cells[0] = int64_t{12};
  cells[kRunColumnCount] = int64_t{0};
  cells[kRunColumnCount + 1] = 0.25;
  cells[kRunColumnCount + 2] = std::string("");
  RunCursor c = RunCursorOfRow(*plan, MemoryRow(cells));
  query.cursor = EncodeRunCursor(c);
  auto next = PlanRunList(query);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(std::get<RunJsonSortKey>(next->cursor->key).number, 0.25);
  EXPECT_EQ(next->cursor->pk, 12);
  query.sort = "summary.val";
  EXPECT_FALSE(PlanRunList(query).ok());
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
