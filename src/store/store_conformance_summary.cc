// Conformance cases: the summary's last values (store/run_summary.h) and the buckets of points
// without a finite value, which the history route answers as gaps (docs/api.md, "History").
#include <cmath>
#include <limits>

#include "core/clock.h"
#include "core/json.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

// The value of `key` in the summary of `run`, serialized ("" when absent).
std::string SummaryField(Store& store, const RunRef& ref, const std::string& key) {
  auto run = store.GetRun(ref);
  if (!run.ok()) return "error: " + run.status().ToString();
  auto v = json::Parse(run->summary_json);
  if (!v.ok() || !v->is_object()) return "";
  const auto* f = v->get_object().if_contains(key);
  return f ? json::Serialize(*f) : "";
}

std::string Num(double d) { return json::Serialize(json::FromDouble(d)); }

// One row per step of `key` with the given values, steps assigned by the store.
IngestBatch Values(int64_t seq, const std::string& key, std::initializer_list<double> values) {
  IngestBatchBuilder b(seq);
  for (double v : values) b.AddHistoryRow(kAssignStep, 0, {{key, v}});
  return b.Finish();
}

// A client's last-value summary from early in the run, then the process dies (the agent
// reports the crash): the summary shows the last stored point, not the early value.
TEST_P(StoreConformanceTest, SummaryOfACrashedWriterFollowsItsLastStoredPoint) {
  MakeRun("run1");
  Join("run1", "rank_0");
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(1, "loss", {6.5, 6.25}), 1).status());
  RunPatch early;
  early.summary_json = R"({"loss": 6.25})";  // the client's automatic last value, at step 1
  COHORT_ASSERT_OK(store().PatchRun(Ref("run1"), early).status());
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(2, "loss", {3.5, 0.476}), 2).status());
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(3, "acc", {0.25, 0.5}), 3).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(6.25));  // what was sent, so far
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "rank_0", RunState::kCrashed, std::nullopt, 4).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(0.476));
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "acc"), Num(0.5));  // never sent: filled in
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kCrashed);
}

// The same when nobody reports the crash: the heartbeat timeout ends the writer.
TEST_P(StoreConformanceTest, SummaryFollowsTheLastStoredPointWhenHeartbeatsStop) {
  MakeRun("run1");
  Join("run1", "rank_0");
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(1, "loss", {2.0, 1.0}), 1).status());
  RunPatch early;
  early.summary_json = R"({"loss": 1.0})";
  COHORT_ASSERT_OK(store().PatchRun(Ref("run1"), early).status());
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(2, "loss", {0.75, std::nan("")}), 2).status());
  const int64_t now = NowMillis() + 60'000;
  COHORT_ASSERT_OK_AND_ASSIGN(StaleSweep swept, store().MarkStaleWritersCrashed(now - 1, now));
  EXPECT_EQ(swept.crashed.size(), 1u);
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), "\"NaN\"");  // the last point diverged
}

// A value that differs from the last stored point was set on purpose: it stays, whatever is
// logged later; deleting a key is explicit too. Setting a key back to its last stored point
// makes it follow the series again.
TEST_P(StoreConformanceTest, SummaryKeysSetExplicitlyStay) {
  MakeRun("run1");
  Join("run1", "rank_0");
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(1, "loss", {3, 2, 1}), 1).status());
  COHORT_ASSERT_OK(
      store().Ingest(Ref("run1"), "rank_0", Values(2, "acc", {0.5, 0.75}), 2).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(3, "lr", {0.1, 0.01}), 3).status());
  RunPatch p;
  p.summary_json = R"({"loss": 0.5, "best": 7, "lr": null, "acc": 0.75})";
  COHORT_ASSERT_OK(store().PatchRun(Ref("run1"), p).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(4, "loss", {0.25}), 4).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(5, "acc", {0.875}), 5).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(6, "lr", {0.001}), 6).status());
  COHORT_ASSERT_OK(store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 7).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(0.5));   // explicit
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "best"), "7");        // no series: explicit
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "lr"), "");           // deleted on purpose
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "acc"), Num(0.875));  // was its last point
  // Back to the last stored point: the key follows the series again at the next writer end.
  RunPatch back;
  back.summary_json = R"({"loss": 0.25})";
  COHORT_ASSERT_OK(store().PatchRun(Ref("run1"), back).status());
  Join("run1", "rank_0");  // resumed
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(8, "loss", {0.125}), 8).status());
  COHORT_ASSERT_OK(store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 9).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(0.125));
  // Explicitness survives reopening the store.
  Reopen();
  Join("run1", "rank_0");
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(10, "acc", {0.9375}), 10).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 11).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "best"), "7");
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "acc"), Num(0.9375));
}

// A shared run's summary follows its primary writer: a worker's crash does not put the
// worker's values in the run's summary.
TEST_P(StoreConformanceTest, SharedRunSummaryFollowsThePrimary) {
  MakeRun("run1");
  Join("run1", "rank_0");
  Join("run1", "rank_1", /*primary=*/false, /*update_finish_state=*/false);
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(1, "loss", {1, 0.5}), 1).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_1", Values(1, "loss", {9, 8, 7}), 1).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "rank_1", RunState::kCrashed, std::nullopt, 2).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(0.5));
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", Values(2, "loss", {0.25}), 3).status());
  COHORT_ASSERT_OK(store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 4).status());
  EXPECT_EQ(SummaryField(store(), Ref("run1"), "loss"), Num(0.25));
}

// Buckets of points without a finite value carry what the history route needs to answer them
// as gaps: their NaN count, and NaN in neither min, max nor the sum.
TEST_P(StoreConformanceTest, BucketsCountNaNsAndKeepThemOutOfMinMaxAndSum) {
  MakeRun("run1");
  Join("run1", "w");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  COHORT_ASSERT_OK(
      store()
          .Ingest(Ref("run1"), "w", Values(1, "v", {1, 3, nan, nan, nan, nan, 5, nan}), 1)
          .status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist,
                              store().QueryHistory(HistoryQuery{.run = Ref("run1"), .series = {.buckets = 4}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].buckets.size(), 4u);
  const series::Bucket& b0 = hist[0].buckets[0];  // steps 0-1: 1, 3
  EXPECT_EQ(b0.nan_count, 0);
  EXPECT_EQ(b0.sum, 4);
  const series::Bucket& b1 = hist[0].buckets[1];  // steps 2-3: NaN, NaN
  EXPECT_EQ(b1.count, 2);
  EXPECT_EQ(b1.nan_count, 2);
  EXPECT_EQ(b1.sum, 0);
  EXPECT_TRUE(std::isnan(b1.last));
  const series::Bucket& b3 = hist[0].buckets[3];  // steps 6-7: 5, NaN
  EXPECT_EQ(b3.count, 2);
  EXPECT_EQ(b3.nan_count, 1);
  EXPECT_EQ(b3.min, 5);
  EXPECT_EQ(b3.max, 5);
  EXPECT_EQ(b3.sum, 5);
}

}  // namespace
}  // namespace cohort::store
