#include "store/ingest_plan.h"

#include <gtest/gtest.h>

#include <limits>

#include "store/ingest_batch_rows_for_test.h"

namespace cohort::store {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(IngestBatchBuilderTest, InternsKeysToOneColumnPerSectionKeepingRowOrder) {
  IngestBatchBuilder b(7);
  b.AddHistoryRow(kAssignStep, 10, {{"loss", 1}, {"acc", 2}});
  b.AddHistoryRow(3, 11, {{"acc", 4}, {"loss", 5}});  // other order: the same columns
  b.AddHistoryRow(kAssignStep, 12, {{"lr", 6}});
  b.AddSystemRow(20, {{"loss", 7}});  // a system key of the same name: its own column
  const IngestBatch batch = b.Finish();
  EXPECT_EQ(batch.seq, 7);
  EXPECT_EQ(batch.history_step, (std::vector<int64_t>{kAssignStep, 3, kAssignStep}));
  EXPECT_EQ(batch.history_time_ms, (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(batch.system_time_ms, (std::vector<int64_t>{20}));
  ASSERT_EQ(batch.columns.size(), 4u);
  EXPECT_EQ(batch.columns[0].key, "loss");
  EXPECT_EQ(batch.columns[0].rows, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(batch.columns[0].values, (std::vector<double>{1, 5}));
  EXPECT_EQ(batch.columns[1].key, "acc");
  EXPECT_EQ(batch.columns[1].values, (std::vector<double>{2, 4}));
  EXPECT_EQ(batch.columns[2].rows, (std::vector<uint32_t>{2}));
  EXPECT_EQ(batch.columns[3].key, "system/loss");
  EXPECT_TRUE(batch.columns[3].system);
  EXPECT_EQ(batch.points(), 6);
  // Read back as rows: what was added, cells in column order.
  const std::vector<RowForTest> rows = HistoryRowsOf(batch);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].values, (std::vector<std::pair<std::string, double>>{{"loss", 5}, {"acc", 4}}));
  EXPECT_EQ(SystemRowsOf(batch)[0].values[0].first, "loss");
}

TEST(IngestBatchBuilderTest, KeyTwiceInOneRowKeepsTheLastValue) {
  IngestBatchBuilder b(1);
  b.AddHistoryRow(kAssignStep, 0, {{"x", 1}, {"x", 2}});
  const IngestBatch batch = b.Finish();
  ASSERT_EQ(batch.columns.size(), 1u);
  EXPECT_EQ(batch.columns[0].values, (std::vector<double>{2}));
  EXPECT_TRUE(ValidateBatch(batch).ok());
}

TEST(IngestPlanTest, StepsContinueFromTheWritersNextStepAndExplicitOnesMoveItPast) {
  IngestBatchBuilder b(1);
  b.AddHistoryRow(kAssignStep, 1, {{"x", 0}});
  b.AddHistoryRow(10, 2, {{"x", 1}});
  b.AddHistoryRow(kAssignStep, 3, {{"x", 2}});
  b.AddHistoryRow(4, 4, {{"x", 3}});  // behind the next step: kept where it is
  b.AddSystemRow(500, {{"cpu", 9}});
  const IngestBatch batch = b.Finish();
  Result<IngestPlan> plan = IngestPlan::Make(batch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->AssignSteps(5).value(), 12);
  std::vector<series::Point> points;
  plan->Points(0, &points);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].step, 5);
  EXPECT_EQ(points[1].step, 10);
  EXPECT_EQ(points[2].step, 11);
  EXPECT_EQ(points[3].step, 4);
  EXPECT_EQ(points[3].time_ms, 4);
  EXPECT_EQ(plan->StepRange(0), (std::pair<int64_t, int64_t>{4, 11}));
  // System samples are indexed by time.
  plan->Points(1, &points);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].step, 500);
  // Assigned again (a retried transaction read another next step).
  EXPECT_EQ(plan->AssignSteps(20).value(), 22);
  plan->Points(0, &points);
  EXPECT_EQ(points[0].step, 20);
  EXPECT_EQ(points[1].step, 10);
  // An explicit last step leaves the counter there; a row without a step then has none left:
  // refused naming the row, never wrapped to a negative step.
  IngestBatchBuilder top(2);
  top.AddHistoryRow(kMax, 0, {{"x", 0}});
  const IngestBatch top_batch = top.Finish();
  Result<IngestPlan> top_plan = IngestPlan::Make(top_batch);
  ASSERT_TRUE(top_plan.ok());
  EXPECT_EQ(top_plan->AssignSteps(0).value(), kMax);
  IngestBatchBuilder over(3);
  over.AddHistoryRow(kMax - 2, 0, {{"x", 0}});  // then kMax - 1, then none left
  over.AddHistoryRow(kAssignStep, 1, {{"x", 1}});
  over.AddHistoryRow(kAssignStep, 2, {{"x", 2}});
  const IngestBatch over_batch = over.Finish();
  Result<IngestPlan> over_plan = IngestPlan::Make(over_batch);
  ASSERT_TRUE(over_plan.ok());
  Result<int64_t> refused = over_plan->AssignSteps(0);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("history[2].step"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(over_plan->AssignSteps(kMax).status().code(), StatusCode::kInvalidArgument);
}

TEST(IngestPlanTest, ColumnsComeInKeyOrder) {
  IngestBatchBuilder b(1);
  b.AddHistoryRow(kAssignStep, 0, {{"zeta", 1}, {"alpha", 2}});
  b.AddSystemRow(0, {{"cpu", 3}});
  const IngestBatch batch = b.Finish();
  Result<IngestPlan> plan = IngestPlan::Make(batch);
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> keys;
  for (uint32_t c : plan->by_key()) keys.push_back(batch.columns[c].key);
  EXPECT_EQ(keys, (std::vector<std::string>{"alpha", "system/cpu", "zeta"}));
}

// What the decoders cannot know is refused whole, naming the problem.
TEST(IngestPlanTest, BadBatchesAreRefusedNamingTheProblem) {
  auto refused = [](const IngestBatch& batch, const std::string& words) {
    Status s = ValidateBatch(batch);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << words;
    EXPECT_NE(s.message().find(words), std::string::npos) << s.ToString();
  };
  auto one = [](std::string key, bool system = false) {
    IngestBatchBuilder b(1);
    if (system) {
      b.AddSystemRow(0, {{key, 1}});
    } else {
      b.AddHistoryRow(kAssignStep, 0, {{key, 1}});
    }
    return b.Finish();
  };
  refused(one("system/cpu"), "reserved for system metrics");
  refused(one(""), "empty metric key");
  refused(one("", true), "empty system metric key");
  refused(one(std::string("a\0b", 3)), "NUL character");
  IngestBatch no_seq = one("x");
  no_seq.seq = 0;
  refused(no_seq, "seq must be > 0");
  IngestBatch bad_stream = one("x");
  bad_stream.console.push_back(ConsoleLine{.stream = "stdlog"});
  refused(bad_stream, "stdlog");
  IngestBatch bad_step = one("x");
  bad_step.history_step[0] = -2;
  refused(bad_step, "history[0].step");
  IngestBatch unordered = one("x");
  unordered.columns[0].rows = {1};
  refused(unordered, "out of order or range");
  IngestBatch twice = one("x");
  twice.columns.push_back(twice.columns[0]);
  refused(twice, "two columns");
  IngestBatch short_values = one("x");
  short_values.columns[0].values.clear();
  refused(short_values, "0 values for 1 rows");
  IngestBatch positions = one("x");
  positions.positions = {StreamPosition{"out", 0, 1}, StreamPosition{"out", 1, 2}};
  refused(positions, "named twice");
}

TEST(IngestPlanTest, KeyBudgetHasOneRuleAndOneMessage) {
  const RunRef ref{"e", "p", "r"};
  EXPECT_TRUE(CheckKeyBudget(ref, 3, 0, "", 3).ok());   // no new key
  EXPECT_TRUE(CheckKeyBudget(ref, 2, 1, "c", 3).ok());  // the last one fits
  EXPECT_TRUE(CheckKeyBudget(ref, 9, 9, "x", 0).ok());  // no limit
  Status over = CheckKeyBudget(ref, 3, 2, "d", 3);
  EXPECT_EQ(over.code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(over.message(),
            "run e/p/r holds 3 distinct keys and this batch adds 2 more (d, ...): the limit is 3 "
            "distinct keys per run (docs/operations.md, \"Limits\")");
}

}  // namespace
}  // namespace cohort::store
