// Conformance cases: ingest (exactly once, steps, system metrics, console), history queries
// (raw paging, buckets, ranges), console queries and concurrent ingest.
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <tuple>

#include "core/clock.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const SeriesData* Find(const std::vector<SeriesData>& all, const std::string& key,
                       const std::string& writer) {
  for (const SeriesData& s : all) {
    if (s.key == key && s.writer == writer) return &s;
  }
  return nullptr;
}

// ---- ingest ----

TEST_P(StoreConformanceTest, IngestStoresEveryPoint) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder bb(1);
  for (int i = 0; i < 300; ++i) {
    bb.AddHistoryRow(kAssignStep, 1000 + i, {{"loss", 1.0 / (i + 1)}, {"acc", i * 0.5}});
  }
  const IngestBatch b = bb.Finish();
  const int64_t now = NowMillis() + 10'000;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", b, now));
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(r.points, 600);
  EXPECT_EQ(r.next_step, 300);

  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].key, "acc");  // ordered by key
  EXPECT_EQ(hist[1].key, "loss");
  const SeriesData& loss = hist[1];
  ASSERT_EQ(loss.points.size(), 300u);
  EXPECT_FALSE(loss.more);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(loss.points[i].step, i);
    EXPECT_EQ(loss.points[i].time_ms, 1000 + i);
    EXPECT_EQ(loss.points[i].value, 1.0 / (i + 1));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[1].key, "loss");
  EXPECT_EQ(series[1].writer, "w");
  EXPECT_EQ(series[1].count, 300);
  EXPECT_EQ(series[1].min_step, 0);
  EXPECT_EQ(series[1].max_step, 299);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  EXPECT_EQ(writers[0].next_step, 300);
  EXPECT_EQ(writers[0].last_seq, 1);
  EXPECT_EQ(writers[0].heartbeat_ms, now);  // ingest is a heartbeat
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.heartbeat_ms, now);
  EXPECT_EQ(run.updated_ms, now);
}

TEST_P(StoreConformanceTest, DuplicateSeqIsStoredOnce) {
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", false, false);
  IngestBatch b = Rows(7, "loss", 10);
  b.console.push_back(ConsoleLine{.time_ms = 1, .text = "once"});
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult first, store().Ingest(Ref("run1"), "a", b, 1));
  EXPECT_FALSE(first.duplicate);
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult again, store().Ingest(Ref("run1"), "a", b, 2));
  EXPECT_TRUE(again.duplicate);
  EXPECT_EQ(again.points, 0);
  EXPECT_EQ(again.next_step, 10);
  // Another writer's batch with the same seq is its own batch.
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult other, store().Ingest(Ref("run1"), "b", b, 3));
  EXPECT_FALSE(other.duplicate);

  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].writer, "a");
  EXPECT_EQ(hist[0].points.size(), 10u);
  EXPECT_EQ(hist[1].writer, "b");
  EXPECT_EQ(hist[1].points.size(), 10u);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  EXPECT_EQ(lines.size(), 2u);
}

// A writer that logs a key again at a step it already sent (its client flushed the step's row
// in between) gets one value per step in the history, the later one, as a step is one row.
TEST_P(StoreConformanceTest, AKeyLoggedAgainAtAStepAnswersItsLatestValue) {
  MakeRun("run1");
  Join("run1", "rank_0", false, false);
  IngestBatchBuilder first(1), second(2);
  first.AddHistoryRow(3, 1, {{"a", 1}, {"b", 1}});
  first.AddHistoryRow(4, 1, {{"a", 10}});
  second.AddHistoryRow(3, 2, {{"a", 2}});
  const IngestBatch b1 = first.Finish(), b2 = second.Finish();
  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_0", b1, 1).ok());
  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_0", b2, 2).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .keys = {"a"}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), 2u);
  EXPECT_EQ(hist[0].points[0].step, 3);
  EXPECT_EQ(hist[0].points[0].value, 2);
  EXPECT_EQ(hist[0].points[1].value, 10);
  // Every stored point, for those who ask.
  HistoryQuery all{.run = Ref("run1"), .keys = {"a"}};
  all.series.latest_per_step = false;
  COHORT_ASSERT_OK_AND_ASSIGN(hist, store().QueryHistory(all));
  ASSERT_EQ(hist[0].points.size(), 3u);
  EXPECT_EQ(hist[0].points[0].value, 1);
  EXPECT_EQ(hist[0].points[1].value, 2);
}

TEST_P(StoreConformanceTest, TwoWritersAtTheSameStepAreBothKept) {
  MakeRun("run1");
  Join("run1", "rank_3", false, false);
  Join("run1", "rank_5", false, false);
  IngestBatchBuilder bb3(1), bb5(1);
  bb3.AddHistoryRow(100, 1, {{"loss", 3}});
  bb5.AddHistoryRow(100, 1, {{"loss", 5}});
  const IngestBatch b3 = bb3.Finish(), b5 = bb5.Finish();
  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_3", b3, 1).ok());
  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_5", b5, 1).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .keys = {"loss"}}));
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].writer, "rank_3");
  ASSERT_EQ(hist[0].points.size(), 1u);
  EXPECT_EQ(hist[0].points[0].value, 3);
  EXPECT_EQ(hist[1].writer, "rank_5");
  ASSERT_EQ(hist[1].points.size(), 1u);
  EXPECT_EQ(hist[1].points[0].value, 5);
  EXPECT_EQ(hist[1].points[0].step, 100);
  // Only one writer asked for.
  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .writers = {"rank_5"}}));
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0].writer, "rank_5");
}

TEST_P(StoreConformanceTest, ServerAssignedStepsContinueAcrossBatches) {
  MakeRun("run1");
  Join("run1", "w");
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r1,
                              store().Ingest(Ref("run1"), "w", Rows(1, "x", 3), 1));
  EXPECT_EQ(r1.next_step, 3);
  // An explicit step moves the next step past it; later rows continue from there.
  IngestBatchBuilder b(2);
  b.AddHistoryRow(10, 5, {{"x", 10}});
  b.AddHistoryRow(kAssignStep, 6, {{"x", 11}});
  b.AddHistoryRow(4, 7, {{"x", 4}});  // behind: kept
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r2, store().Ingest(Ref("run1"), "w", b.Finish(), 2));
  EXPECT_EQ(r2.next_step, 12);
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r3,
                              store().Ingest(Ref("run1"), "w", Rows(3, "x", 2), 3));
  EXPECT_EQ(r3.next_step, 14);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);
  std::vector<int64_t> steps;
  for (const series::Point& p : hist[0].points) steps.push_back(p.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 4, 10, 11, 12, 13}));
}

TEST_P(StoreConformanceTest, NonFiniteValuesRoundTrip) {
  MakeRun("run1");
  Join("run1", "w");
  const double values[] = {std::nan(""), kInf, -kInf,
                           -0.0,         1.5,  std::numeric_limits<double>::min()};
  IngestBatchBuilder b(1);
  for (double v : values) b.AddHistoryRow(kAssignStep, 0, {{"v", v}});
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), 1).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), 6u);
  EXPECT_TRUE(std::isnan(hist[0].points[0].value));
  EXPECT_EQ(hist[0].points[1].value, kInf);
  EXPECT_EQ(hist[0].points[2].value, -kInf);
  EXPECT_TRUE(std::signbit(hist[0].points[3].value));
  EXPECT_EQ(hist[0].points[4].value, 1.5);
  EXPECT_EQ(hist[0].points[5].value, std::numeric_limits<double>::min());
  // Buckets survive NaN and infinities too.
  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .series = {.buckets = 1}}));
  ASSERT_EQ(hist[0].buckets.size(), 1u);
  EXPECT_EQ(hist[0].buckets[0].count, 6);
  EXPECT_EQ(hist[0].buckets[0].max, kInf);
  EXPECT_EQ(hist[0].buckets[0].min, -kInf);
}

TEST_P(StoreConformanceTest, SystemRowsLandUnderSystemPrefix) {
  MakeRun("run1");
  Join("run1", "rank_0");
  Join("run1", "rank_1", false, false);
  IngestBatchBuilder b = RowsBuilder(1, "loss", 2);
  b.AddSystemRow(1000, {{"gpu.0.temp", 60}, {"cpu", 12}});
  b.AddSystemRow(2000, {{"gpu.0.temp", 61}});
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "rank_0", b.Finish(), 1));
  EXPECT_EQ(r.points, 5);
  EXPECT_EQ(r.next_step, 2);  // system samples take no step
  IngestBatchBuilder b1(1);
  b1.AddSystemRow(1500, {{"gpu.0.temp", 70}});
  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_1", b1.Finish(), 1).ok());

  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);  // default keys exclude system/
  EXPECT_EQ(hist[0].key, "loss");
  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .keys = {"system/gpu.0.temp"}}));
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].writer, "rank_0");
  ASSERT_EQ(hist[0].points.size(), 2u);
  EXPECT_EQ(hist[0].points[0].time_ms, 1000);
  EXPECT_EQ(hist[0].points[1].value, 61);
  EXPECT_EQ(hist[1].writer, "rank_1");
  ASSERT_EQ(hist[1].points.size(), 1u);
  EXPECT_EQ(hist[1].points[0].value, 70);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  int system_series = 0;
  for (const SeriesInfo& s : series) system_series += s.key.starts_with("system/");
  EXPECT_EQ(system_series, 3);
  // User keys may not claim the prefix.
  IngestBatchBuilder bad(2);
  bad.AddHistoryRow(kAssignStep, 0, {{"system/cpu", 1}});
  EXPECT_EQ(store().Ingest(Ref("run1"), "rank_0", bad.Finish(), 1).status().code(),
            StatusCode::kInvalidArgument);
}

// A key no store can keep (a NUL character) is refused with the batch, on every engine alike,
// before anything is written.
TEST_P(StoreConformanceTest, KeyWithNulCharacterIsRefusedWithItsBatch) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder b = RowsBuilder(1, "loss", 2);
  b.AddHistoryRow(kAssignStep, 5, {{std::string_view("a\0b", 3), 1.0}});
  auto r = store().Ingest(Ref("run1"), "w", b.Finish(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("NUL"), std::string::npos) << r.status().ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  EXPECT_TRUE(series.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult again,
                              store().Ingest(Ref("run1"), "w", Rows(1, "loss", 2), 2));
  EXPECT_FALSE(again.duplicate);  // the refused batch's seq was not taken
}

TEST_P(StoreConformanceTest, FailedIngestLeavesNothingHalfWritten) {
  MakeRun("run1");
  Join("run1", "w");
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", Rows(1, "loss", 5), 1).ok());
  auto unknown = store().Ingest(Ref("run1"), "ghost", Rows(2, "loss", 5), 2);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("ghost"), std::string::npos);
  // A batch failing validation after good rows changes nothing either.
  IngestBatch bad = Rows(2, "loss", 5);
  bad.console.push_back(ConsoleLine{.stream = "stdlog", .text = "x"});
  EXPECT_EQ(store().Ingest(Ref("run1"), "w", bad, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store().Ingest(Ref("run1"), "w", Rows(0, "loss", 1), 2).status().code(),
            StatusCode::kInvalidArgument);  // seq must be > 0

  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].count, 5);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  ASSERT_EQ(writers.size(), 1u);
  EXPECT_EQ(writers[0].next_step, 5);
  EXPECT_EQ(writers[0].last_seq, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  EXPECT_TRUE(lines.empty());
  // seq 2 was never stored, so it is not a duplicate now.
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult ok,
                              store().Ingest(Ref("run1"), "w", Rows(2, "loss", 5), 3));
  EXPECT_FALSE(ok.duplicate);
}

// ---- history ----

TEST_P(StoreConformanceTest, HistoryRawPagesByStep) {
  MakeRun("run1");
  Join("run1", "w");
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", Rows(1, "loss", 250), 1).ok());
  HistoryQuery q{.run = Ref("run1"), .series = {.limit = 100}};
  std::vector<int64_t> steps;
  for (int page = 0; page < 5; ++page) {
    COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(q));
    ASSERT_EQ(hist.size(), 1u);
    for (const series::Point& p : hist[0].points) steps.push_back(p.step);
    if (!hist[0].more) break;
    ASSERT_FALSE(hist[0].points.empty());
    q.series.after_step = hist[0].points.back().step;
  }
  ASSERT_EQ(steps.size(), 250u);
  for (int i = 0; i < 250; ++i) EXPECT_EQ(steps[i], i);
}

// Large batches that neither start nor end on chunk edges (sealed chunks are cut at multiples
// of 1,024 steps, series/tail.h): every point is stored once, in order, and bucketed counts on a
// 1,024-wide grid add up.
TEST_P(StoreConformanceTest, MisalignedLargeBatchesKeepEveryPointOnce) {
  MakeRun("run1");
  Join("run1", "w");
  int64_t step = 700;
  int seq = 0;
  for (int n : {600, 10000, 333, 5000, 2048, 1, 4000}) {
    IngestBatchBuilder b(++seq);
    for (int i = 0; i < n; ++i, ++step) b.AddHistoryRow(step, step, {{"m", double(step)}});
    ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), seq).ok());
  }
  HistoryQuery q{.run = Ref("run1"), .series = {.limit = 1000000}};
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(q));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(int64_t(hist[0].points.size()), step - 700);
  for (size_t i = 0; i < hist[0].points.size(); ++i) {
    ASSERT_EQ(hist[0].points[i].step, 700 + int64_t(i));
    ASSERT_EQ(hist[0].points[i].value, double(700 + int64_t(i)));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto buckets, store().QueryHistory(HistoryQuery{
                        .run = Ref("run1"),
                        .series = {.min_step = 0, .max_step = 1024 * 30 - 1, .buckets = 30}}));
  ASSERT_EQ(buckets.size(), 1u);
  int64_t total = 0;
  for (const series::Bucket& bk : buckets[0].buckets) {
    EXPECT_EQ(bk.step_min / 1024, bk.step_max / 1024);
    total += bk.count;
  }
  EXPECT_EQ(total, step - 700);
}

TEST_P(StoreConformanceTest, BucketsEqualBruteForceAcrossChunks) {
  MakeRun("run1");
  Join("run1", "w");
  // 12,345 points in batches of 1,000: several chunks, a partly filled head.
  std::vector<series::Point> all;
  for (int seq = 1; seq <= 13; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < 1000 && int(all.size()) < 12345; ++i) {
      const int64_t step = int64_t(all.size());
      const double v = std::sin(step * 0.01) * 100 + (step % 97) - (step % 13 == 0 ? 500 : 0);
      b.AddHistoryRow(kAssignStep, 10 * step, {{"m", v}});
      all.push_back(series::Point{step, 10 * step, v});
    }
    ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), seq).ok());
  }
  for (int n : {1, 7, 100, 1000}) {
    COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{
                                               .run = Ref("run1"), .series = {.buckets = n}}));
    ASSERT_EQ(hist.size(), 1u);
    const int64_t lo = 0, hi = int64_t(all.size()) - 1;
    const int64_t width = (hi - lo + 1 + n - 1) / n;
    std::map<int64_t, series::Bucket> expect;
    for (const series::Point& p : all) {
      auto [it, fresh] = expect.try_emplace((p.step - lo) / width);
      series::Bucket& b = it->second;
      if (fresh) {
        b = series::Bucket{.step_min = p.step,
                           .step_max = p.step,
                           .time_min = p.time_ms,
                           .time_max = p.time_ms,
                           .min = p.value,
                           .max = p.value,
                           .first = p.value,
                           .last = p.value};
      }
      b.count++;
      b.min = std::min(b.min, p.value);
      b.max = std::max(b.max, p.value);
      b.sum += p.value;
      b.step_max = p.step;
      b.time_max = p.time_ms;
      b.last = p.value;
    }
    ASSERT_EQ(hist[0].buckets.size(), expect.size()) << n;
    size_t i = 0;
    for (const auto& [index, e] : expect) {
      const series::Bucket& got = hist[0].buckets[i++];
      EXPECT_EQ(got.count, e.count) << n << " bucket " << index;
      EXPECT_EQ(got.min, e.min) << n << " bucket " << index;
      EXPECT_EQ(got.max, e.max) << n << " bucket " << index;
      EXPECT_EQ(got.step_min, e.step_min) << n << " bucket " << index;
      EXPECT_EQ(got.step_max, e.step_max) << n << " bucket " << index;
      EXPECT_EQ(got.first, e.first) << n << " bucket " << index;
      EXPECT_EQ(got.last, e.last) << n << " bucket " << index;
      EXPECT_NEAR(got.sum, e.sum, 1e-6 * std::max(1.0, std::fabs(e.sum))) << n;
    }
  }
}

// A bucketed read with a time range and no step range spans the steps of the points in that time
// range: it took the steps of the chunks overlapping it, which changed when the writer finished
// and its tails were cut again (the same data charted in other buckets).
TEST_P(StoreConformanceTest, TimeFilteredBucketsKeepTheirGridWhenTheWriterFinishes) {
  MakeRun("run1");
  Join("run1", "w");
  for (int seq = 1; seq <= 30; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < 100; ++i) {
      const int64_t step = int64_t(seq - 1) * 100 + i;
      b.AddHistoryRow(step, 1'000'000 + step, {{"m", double(step % 7)}});
    }
    ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), seq).ok());
  }
  const HistoryQuery q{
      .run = Ref("run1"),
      .series = {.min_time_ms = 1'001'000, .max_time_ms = 1'001'999, .buckets = 4}};
  auto grid = [&]() {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> out;
    auto hist = store().QueryHistory(q);
    EXPECT_TRUE(hist.ok()) << hist.status().ToString();
    if (hist.ok() && hist->size() == 1) {
      for (const series::Bucket& b : (*hist)[0].buckets)
        out.emplace_back(b.step_min, b.step_max, b.count);
    }
    return out;
  };
  // The window's steps 1000..1999 in 4 buckets of 250, however the points were cut into chunks.
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> want = {
      {1000, 1249, 250}, {1250, 1499, 250}, {1500, 1749, 250}, {1750, 1999, 250}};
  EXPECT_EQ(grid(), want);
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 2'000'000).status());
  EXPECT_EQ(grid(), want);
}

// A summary of -0.0 points reads back as -0.0 (an SQLite REAL column would store it as the
// integer 0): bucket extremes come from chunk summaries, sealed and tail, not from points.
TEST_P(StoreConformanceTest, NegativeZeroSummariesKeepTheirSign) {
  MakeRun("run1");
  Join("run1", "w");
  int64_t step = 0;
  for (int seq = 1; seq <= 12; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < 500; ++i, ++step) b.AddHistoryRow(step, step, {{"z", -0.0}});
    ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), seq).ok());
  }
  for (int n : {1, 3, 6}) {
    COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{
                                               .run = Ref("run1"), .series = {.buckets = n}}));
    ASSERT_EQ(hist.size(), 1u);
    ASSERT_FALSE(hist[0].buckets.empty());
    for (const series::Bucket& bk : hist[0].buckets) {
      EXPECT_TRUE(bk.min == 0 && std::signbit(bk.min)) << n << " min " << bk.min;
      EXPECT_TRUE(bk.max == 0 && std::signbit(bk.max)) << n << " max " << bk.max;
      EXPECT_TRUE(bk.first == 0 && std::signbit(bk.first)) << n << " first " << bk.first;
      EXPECT_TRUE(bk.last == 0 && std::signbit(bk.last)) << n << " last " << bk.last;
    }
  }
}

// Batches of every size from 1 to 700 points (series/tail.h): tail chunks, compactions at the
// point and the chunk limits, large batches sealed at once, retries of stored batches; every
// point is read back once, in order, raw and bucketed.
TEST_P(StoreConformanceTest, TailCompactionKeepsEveryPointOnce) {
  MakeRun("run1");
  Join("run1", "w");
  std::vector<series::Point> all;
  const int sizes[] = {1, 3, 50, 700, 1, 1, 200, 999, 5, 2};
  int64_t seq = 0;
  for (int round = 0; round < 12; ++round) {
    for (int n : sizes) {
      IngestBatchBuilder bb(++seq);
      for (int i = 0; i < n; ++i) {
        const int64_t step = int64_t(all.size());
        const double v = std::cos(double(step) * 0.003) + double(step % 7);
        bb.AddHistoryRow(kAssignStep, step, {{"m", v}});
        all.push_back(series::Point{step, step, v});
      }
      const IngestBatch b = bb.Finish();
      ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b, seq).ok());
      if (seq % 7 == 0) {  // a retry: acknowledged, stored once
        COHORT_ASSERT_OK_AND_ASSIGN(auto again, store().Ingest(Ref("run1"), "w", b, seq));
        EXPECT_TRUE(again.duplicate);
      }
    }
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].count, int64_t(all.size()));
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{
                                             .run = Ref("run1"), .series = {.limit = 1000000}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(hist[0].points[i].step, all[i].step) << i;
    ASSERT_EQ(hist[0].points[i].value, all[i].value) << i;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto buckets, store().QueryHistory(HistoryQuery{
                                                .run = Ref("run1"), .series = {.buckets = 10}}));
  ASSERT_EQ(buckets.size(), 1u);
  int64_t counted = 0;
  for (const series::Bucket& b : buckets[0].buckets) counted += b.count;
  EXPECT_EQ(counted, int64_t(all.size()));
}

TEST_P(StoreConformanceTest, HistoryFiltersByStepAndTimeRange) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder b(1);
  for (int i = 0; i < 6000; ++i) b.AddHistoryRow(kAssignStep, 100000 + i * 10, {{"m", i}});
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b.Finish(), 1).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, store().QueryHistory(HistoryQuery{
                     .run = Ref("run1"), .series = {.min_step = 4090, .max_step = 4200}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), 111u);
  EXPECT_EQ(hist[0].points.front().step, 4090);
  EXPECT_EQ(hist[0].points.back().step, 4200);

  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store().QueryHistory(HistoryQuery{
                .run = Ref("run1"),
                .series = {.min_time_ms = 100000 + 10 * 10, .max_time_ms = 100000 + 19 * 10}}));
  ASSERT_EQ(hist[0].points.size(), 10u);
  EXPECT_EQ(hist[0].points.front().step, 10);
  EXPECT_EQ(hist[0].points.back().step, 19);

  COHORT_ASSERT_OK_AND_ASSIGN(
      hist,
      store().QueryHistory(HistoryQuery{
          .run = Ref("run1"), .series = {.min_step = 1000, .max_step = 1999, .buckets = 10}}));
  ASSERT_EQ(hist[0].buckets.size(), 10u);
  EXPECT_EQ(hist[0].buckets[0].step_min, 1000);
  EXPECT_EQ(hist[0].buckets[0].count, 100);
  EXPECT_EQ(hist[0].buckets[9].step_max, 1999);
  EXPECT_EQ(hist[0].buckets[9].max, 1999);
}

// ---- console ----

TEST_P(StoreConformanceTest, ConsoleFiltersByLabelStreamAndText) {
  MakeRun("run1");
  Join("run1", "rank_0");
  Join("run1", "rank_1", false, false);
  for (const char* label : {"rank_0", "rank_1"}) {
    IngestBatch b{.seq = 1};
    b.console.push_back(
        ConsoleLine{.time_ms = 1, .stream = "stdout", .text = std::string("epoch 1 on ") + label});
    b.console.push_back(ConsoleLine{.time_ms = 2, .stream = "stderr", .text = "Warning: slow"});
    ASSERT_TRUE(store().Ingest(Ref("run1"), label, b, 1).ok());
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].label, "rank_0");
  EXPECT_EQ(lines[0].text, "epoch 1 on rank_0");
  EXPECT_LT(lines[0].id, lines[1].id);
  COHORT_ASSERT_OK_AND_ASSIGN(
      lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .labels = {"rank_1"}}));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].label, "rank_1");
  COHORT_ASSERT_OK_AND_ASSIGN(
      lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .stream = "stderr"}));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].stream, "stderr");
  COHORT_ASSERT_OK_AND_ASSIGN(
      lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .text = "on rank"}));
  EXPECT_EQ(lines.size(), 2u);
  COHORT_ASSERT_OK_AND_ASSIGN(
      lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .text = "warning"}));
  EXPECT_TRUE(lines.empty());  // case-sensitive
  COHORT_ASSERT_OK_AND_ASSIGN(
      lines, store().QueryConsole(ConsoleQuery{
                 .run = Ref("run1"), .labels = {"rank_0"}, .stream = "stdout", .text = "epoch"}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "epoch 1 on rank_0");
}

// Text search answers every pattern as a plain, case-sensitive substring: short ones (below an
// index's trigram size), quotes, LIKE wildcards, backslashes and multi-byte characters included.
TEST_P(StoreConformanceTest, ConsoleTextSearchTakesOddPatternsLiterally) {
  MakeRun("run1");
  Join("run1", "w");
  const std::vector<std::string> texts = {"loss=0.5 \"quoted\" done",
                                          "100% of 5_000 steps",
                                          "path C:\\tmp\\x",
                                          "épsilon ünïcode",
                                          "a",
                                          "ab",
                                          "plain line",
                                          "OOM at step 7",
                                          "oom lower"};
  IngestBatch b{.seq = 1};
  for (const std::string& t : texts) b.console.push_back(ConsoleLine{.time_ms = 1, .text = t});
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b, 1).ok());
  auto find = [&](const std::string& pattern) {
    std::vector<std::string> got;
    auto lines = store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .text = pattern});
    EXPECT_TRUE(lines.ok()) << pattern << ": " << lines.status().ToString();
    if (lines.ok()) {
      for (const ConsoleLine& l : *lines) got.push_back(l.text);
    }
    std::vector<std::string> want;
    for (const std::string& t : texts) {
      if (t.find(pattern) != std::string::npos) want.push_back(t);
    }
    EXPECT_EQ(got, want) << "pattern: " << pattern;
    auto index = store().IndexConsole(ConsoleQuery{.run = Ref("run1"), .text = pattern}, 1);
    EXPECT_TRUE(index.ok());
    if (index.ok()) {
      EXPECT_EQ(index->total, int64_t(want.size())) << "pattern: " << pattern;
    }
  };
  for (const char* pattern : {"a", "ab", "\"quoted\"", "\"", "100%", "%", "_", "5_0", "\\tmp", "\\",
                              "é", "ünï", "OOM", "oom", "o", "line", "nowhere", "s\" d"}) {
    find(pattern);
  }
}

TEST_P(StoreConformanceTest, ConsolePagesByIdWithoutGaps) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatch b{.seq = 1};
  for (int i = 0; i < 25; ++i) {
    b.console.push_back(ConsoleLine{.time_ms = i, .text = "line " + std::to_string(i)});
  }
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b, 1).ok());
  ConsoleQuery q{.run = Ref("run1"), .limit = 10};
  std::vector<std::string> texts;
  for (int page = 0; page < 5; ++page) {
    COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(q));
    if (lines.empty()) break;
    EXPECT_LE(lines.size(), 10u);
    for (const auto& l : lines) texts.push_back(l.text);
    q.after_id = lines.back().id;
  }
  ASSERT_EQ(texts.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(texts[i], "line " + std::to_string(i));
}

TEST_P(StoreConformanceTest, ConsoleIndexCountsAndStridesLikeThePages) {
  MakeRun("run1");
  for (const char* label : {"rank_0", "rank_1"}) {
    Join("run1", label);
    IngestBatch b{.seq = 1};
    for (int i = 0; i < 25; ++i) {
      b.console.push_back(ConsoleLine{.time_ms = i,
                                      .stream = i % 5 == 0 ? "stderr" : "stdout",
                                      .text = "line " + std::to_string(i) + " of " + label});
    }
    ASSERT_TRUE(store().Ingest(Ref("run1"), label, b, 1).ok());
  }
  // The index must agree with the lines QueryConsole returns for the same filter.
  auto check = [&](ConsoleQuery q, int64_t stride) -> int64_t {
    q.limit = 10000;
    auto lines = store().QueryConsole(q);
    auto index = store().IndexConsole(q, stride);
    EXPECT_TRUE(lines.ok()) << lines.status().ToString();
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    if (!lines.ok() || !index.ok()) return -1;
    EXPECT_EQ(index->total, int64_t(lines->size()));
    std::vector<int64_t> want;
    for (size_t i = stride - 1; i < lines->size(); i += stride) want.push_back((*lines)[i].id);
    EXPECT_EQ(index->stride_ids, want);
    EXPECT_EQ(index->last_id, lines->empty() ? q.after_id : lines->back().id);
    return index->total;
  };
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1")}, 10), 50);
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1"), .labels = {"rank_1"}}, 7), 25);
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1"), .stream = "stderr"}, 2), 10);
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1"), .text = "line 1"}, 3), 22);
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1"), .labels = {"rank_0"}, .text = "nothing"}, 3), 0);
  // From a cursor: only the lines after it.
  COHORT_ASSERT_OK_AND_ASSIGN(auto all, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  EXPECT_EQ(check(ConsoleQuery{.run = Ref("run1"), .after_id = all[19].id}, 10), 30);
  EXPECT_EQ(store().IndexConsole(ConsoleQuery{.run = Ref("nope")}, 10).status().code(),
            StatusCode::kNotFound);
}

// ---- concurrency ----

TEST_P(StoreConformanceTest, ConcurrentIngestFromFourWritersLosesNothing) {
  MakeRun("run1");
  constexpr int kWriters = 4, kBatches = 40, kRows = 50;
  for (int w = 0; w < kWriters; ++w) Join("run1", "rank_" + std::to_string(w), w == 0, w == 0);
  std::vector<std::thread> threads;
  std::vector<Status> errors(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int seq = 1; seq <= kBatches; ++seq) {
        IngestBatchBuilder bb = RowsBuilder(seq, "loss", kRows, seq * 1000.0);
        bb.AddSystemRow(seq, {{"cpu", double(w)}});
        bb.AddConsole(ConsoleLine{.time_ms = seq, .text = "batch"});
        const IngestBatch b = bb.Finish();
        auto r = store().Ingest(Ref("run1"), "rank_" + std::to_string(w), b, seq);
        if (!r.ok()) {
          errors[w] = r.status();
          return;
        }
        // Reads run beside the writes.
        if (seq % 10 == 0) (void)store().QueryHistory(HistoryQuery{.run = Ref("run1")});
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : errors) EXPECT_TRUE(s.ok()) << s.ToString();

  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), size_t(2 * kWriters));
  for (const SeriesInfo& s : series) {
    EXPECT_EQ(s.count, s.key == "loss" ? kBatches * kRows : kBatches) << s.key << " " << s.writer;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), size_t(kWriters));
  for (const SeriesData& s : hist) {
    ASSERT_EQ(s.points.size(), size_t(kBatches * kRows)) << s.writer;
    for (size_t i = 0; i < s.points.size(); ++i) ASSERT_EQ(s.points[i].step, int64_t(i));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1"), .limit = 100000}));
  EXPECT_EQ(lines.size(), size_t(kWriters * kBatches));
  EXPECT_NE(Find(hist, "loss", "rank_3"), nullptr);
}

TEST_P(StoreConformanceTest, ConcurrentIngestAndHeartbeatsFailOnlyTheBadRequests) {
  // Concurrent batches, retried seqs, batches and heartbeats for an unknown writer, and
  // heartbeats: each bad request fails alone (kNotFound), a retry is a duplicate, and what the
  // others store is exact (also the contract for any backend that groups concurrent writes).
  // Odd writers send ordered batches (a stream each, no record per batch), even ones unordered.
  MakeRun("run1");
  constexpr int kWriters = 6, kBatches = 30, kRows = 20;
  for (int w = 0; w < kWriters; ++w) Join("run1", "w" + std::to_string(w), w == 0, w == 0);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kWriters);
  std::vector<int> duplicates(kWriters), not_found(kWriters);
  const int64_t base = NowMillis();
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string label = "w" + std::to_string(w);
      auto batch = [&](int seq) {
        IngestBatch b = Rows(seq, "loss", kRows);
        b.ordered_stream = w % 2 == 1 ? "agent-" + std::to_string(w) : "";
        return b;
      };
      for (int seq = 1; seq <= kBatches; ++seq) {
        auto r = store().Ingest(Ref("run1"), label, batch(seq), base + seq);
        if (!r.ok() || r->duplicate) errors[w] += "batch " + std::to_string(seq) + "; ";
        if (seq % 5 == 0) {  // a retry of the batch just stored
          auto again = store().Ingest(Ref("run1"), label, batch(seq), base + seq);
          if (again.ok() && again->duplicate) ++duplicates[w];
          auto ghost = store().Ingest(Ref("run1"), "ghost", Rows(seq, "loss", kRows), base);
          if (!ghost.ok() && ghost.status().code() == StatusCode::kNotFound) ++not_found[w];
        }
        Status hb = store().Heartbeat(Ref("run1"), label, base + kBatches + seq).status();
        if (!hb.ok()) errors[w] += "heartbeat: " + hb.ToString() + "; ";
        if (store().Heartbeat(Ref("run1"), "ghost", base).status().code() !=
            StatusCode::kNotFound) {
          errors[w] += "ghost heartbeat accepted; ";
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_EQ(errors[w], "") << w;
    EXPECT_EQ(duplicates[w], kBatches / 5) << w;
    EXPECT_EQ(not_found[w], kBatches / 5) << w;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), size_t(kWriters));
  for (const SeriesInfo& s : series) EXPECT_EQ(s.count, kBatches * kRows) << s.writer;
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  ASSERT_EQ(writers.size(), size_t(kWriters));
  for (const WriterRecord& w : writers) {
    EXPECT_EQ(w.last_seq, kBatches) << w.label;
    EXPECT_EQ(w.next_step, kBatches * kRows) << w.label;
    EXPECT_EQ(w.heartbeat_ms, base + 2 * kBatches) << w.label;  // the latest heartbeat won
  }
}

}  // namespace
}  // namespace cohort::store
