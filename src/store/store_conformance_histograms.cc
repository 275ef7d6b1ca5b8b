// Conformance cases: histogram values (issue 15) — stored with the batch's scalars, one type per
// key and run (across writers, nothing of a refused batch written), a step logged again keeps
// the last, the histogram query (keys, writers, step range, buckets: exact sums for equal bins,
// re-binned for different ones) and the store dump round trip of the histograms table.
#include <cmath>
#include <numeric>

#include "store/store_conformance.h"

namespace cohort::store {
namespace {

Histogram Uniform(double lo, double hi, std::vector<double> counts) {
  Histogram h;
  h.lo = lo;
  h.hi = hi;
  h.counts = std::move(counts);
  return h;
}

Histogram Explicit(std::vector<double> edges, std::vector<double> counts) {
  Histogram h;
  h.edges = std::move(edges);
  h.counts = std::move(counts);
  return h;
}

const HistogramSeries* Find(const std::vector<HistogramSeries>& all, const std::string& key,
                            const std::string& writer) {
  for (const HistogramSeries& s : all) {
    if (s.key == key && s.writer == writer) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_P(StoreConformanceTest, HistogramsAreStoredWithTheScalarsOfTheirBatch) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder bb(1);
  bb.AddHistoryRow(0, 10, {{"loss", 0.5}});
  bb.AddHistoryRow(1, 11, {{"loss", 0.4}});
  bb.AddHistogram({"grad", 0, 10, Uniform(-1, 1, {1, 2, 3, 4})});
  bb.AddHistogram({"grad", 1, 11, Explicit({0, 0.5, 10}, {7, 1.5})});
  bb.AddHistogram({"big", 1, 11, Uniform(0, 1, {1e300, 0})});
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", bb.Finish(), 1));
  EXPECT_EQ(r.next_step, 2);

  COHORT_ASSERT_OK_AND_ASSIGN(auto keys, store().ListHistograms(Ref("run1")));
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].key, "big");
  EXPECT_EQ(keys[1].key, "grad");
  EXPECT_EQ(keys[1].writer, "w");
  EXPECT_EQ(keys[1].count, 2);
  EXPECT_EQ(keys[1].min_step, 0);
  EXPECT_EQ(keys[1].max_step, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);  // histograms are not scalar series
  EXPECT_EQ(series[0].key, "loss");

  COHORT_ASSERT_OK_AND_ASSIGN(auto all,
                              store().QueryHistograms(HistogramQuery{.run = Ref("run1")}));
  const HistogramSeries* grad = Find(all, "grad", "w");
  ASSERT_NE(grad, nullptr);
  ASSERT_EQ(grad->steps.size(), 2u);
  EXPECT_EQ(grad->steps[0].step, 0);
  EXPECT_EQ(grad->steps[0].time_ms, 10);
  EXPECT_TRUE(grad->steps[0].value.uniform());
  EXPECT_EQ(grad->steps[0].value.lo, -1);
  EXPECT_EQ(grad->steps[0].value.hi, 1);
  EXPECT_EQ(grad->steps[0].value.counts, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(grad->steps[1].value.edges, (std::vector<double>{0, 0.5, 10}));
  EXPECT_EQ(grad->steps[1].value.counts, (std::vector<double>{7, 1.5}));
  const HistogramSeries* big = Find(all, "big", "w");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->steps[0].value.counts, (std::vector<double>{1e300, 0}));
}

TEST_P(StoreConformanceTest, HistogramAtAStepLoggedAgainKeepsTheLast) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder a(1), b(2);
  a.AddHistogram({"h", 5, 1, Uniform(0, 1, {1})});
  b.AddHistogram({"h", 5, 2, Uniform(0, 2, {2, 3})});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", a.Finish(), 1).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 2).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto all, store().QueryHistograms(HistogramQuery{.run = Ref("run1")}));
  ASSERT_EQ(all.size(), 1u);
  ASSERT_EQ(all[0].steps.size(), 1u);
  EXPECT_EQ(all[0].steps[0].value.counts, (std::vector<double>{2, 3}));
  EXPECT_EQ(all[0].steps[0].time_ms, 2);
}

TEST_P(StoreConformanceTest, AKeyHasOneTypePerRunAcrossWriters) {
  MakeRun("run1");
  Join("run1", "a", true, true);
  Join("run1", "b", false, false);
  IngestBatchBuilder scalars(1);
  scalars.AddHistoryRow(0, 1, {{"loss", 1}});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", scalars.Finish(), 1).status());
  IngestBatchBuilder hist(2);
  hist.AddHistogram({"h", 0, 1, Uniform(0, 1, {1})});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", hist.Finish(), 1).status());

  // Writer b: a histogram under a scalar key of writer a, with other data in the batch.
  IngestBatchBuilder bad(1);
  bad.AddHistoryRow(0, 1, {{"acc", 1}});
  bad.AddHistogram({"loss", 0, 1, Uniform(0, 1, {1})});
  bad.AddConsole(ConsoleLine{.time_ms = 1, .stream = "stdout", .text = "x"});
  Result<IngestResult> r = store().Ingest(Ref("run1"), "b", bad.Finish(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'loss'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("scalar"), std::string::npos);
  EXPECT_NE(r.status().message().find("histogram"), std::string::npos);
  // And a scalar under a histogram key.
  IngestBatchBuilder bad2(2);
  bad2.AddHistoryRow(0, 1, {{"h", 2}});
  r = store().Ingest(Ref("run1"), "b", bad2.Finish(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'h' is a histogram"), std::string::npos)
      << r.status().message();
  // Nothing of either batch was written; the seqs are free for the writer's next batches.
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].key, "loss");
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  EXPECT_TRUE(lines.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(auto hists, store().ListHistograms(Ref("run1")));
  ASSERT_EQ(hists.size(), 1u);
  IngestBatchBuilder good(1);
  good.AddHistogram({"h", 0, 1, Uniform(0, 1, {4})});
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult ok, store().Ingest(Ref("run1"), "b", good.Finish(), 1));
  EXPECT_FALSE(ok.duplicate);
  // One batch with the same key as both types is refused before anything is read.
  IngestBatchBuilder both(3);
  both.AddHistoryRow(5, 1, {{"x", 1}});
  both.AddHistogram({"x", 5, 1, Uniform(0, 1, {1})});
  r = store().Ingest(Ref("run1"), "a", both.Finish(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos);
}

TEST_P(StoreConformanceTest, InvalidHistogramsAreRefusedWithTheirBatch) {
  MakeRun("run1");
  Join("run1", "w");
  const Histogram bad[] = {Uniform(0, 1, {}), Uniform(1, 1, {1}), Uniform(0, 1, {-1}),
                           Uniform(0, 1, {std::nan("")}), Explicit({0, 2, 1}, {1, 1}),
                           Explicit({0, 1}, {1, 1}), Uniform(0, 1, std::vector<double>(513, 1))};
  int64_t seq = 1;
  for (const Histogram& h : bad) {
    IngestBatchBuilder bb(seq++);
    bb.AddHistoryRow(0, 1, {{"loss", 1}});
    bb.AddHistogram({"h", 0, 1, h});
    Result<IngestResult> r = store().Ingest(Ref("run1"), "w", bb.Finish(), 1);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("'h'"), std::string::npos) << r.status().message();
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  EXPECT_TRUE(series.empty());
}

TEST_P(StoreConformanceTest, HistogramQueryFiltersAndMergesStepsIntoBuckets) {
  MakeRun("run1");
  Join("run1", "a", true, true);
  Join("run1", "b", false, false);
  IngestBatchBuilder a(1), b(1);
  for (int step = 0; step < 100; ++step) {
    a.AddHistogram({"h", step, step, Uniform(0, 4, {1, 2, 3, double(step)})});
    // writer b: the range moves at step 50 (re-binned when merged)
    const double lo = step < 50 ? 0 : 2;
    b.AddHistogram({"h", step, step, Uniform(lo, lo + 2, {1, 1})});
    a.AddHistogram({"other", step, step, Uniform(0, 1, {1})});
  }
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", a.Finish(), 1).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "b", b.Finish(), 1).status());

  COHORT_ASSERT_OK_AND_ASSIGN(
      auto got, store().QueryHistograms(HistogramQuery{
                    .run = Ref("run1"), .keys = {"h"}, .writers = {"a"}, .min_step = 10,
                    .max_step = 19}));
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].steps.size(), 10u);
  EXPECT_EQ(got[0].count, 10);
  EXPECT_EQ(got[0].steps.front().step, 10);
  EXPECT_EQ(got[0].steps.back().step, 19);

  COHORT_ASSERT_OK_AND_ASSIGN(
      got, store().QueryHistograms(HistogramQuery{.run = Ref("run1"), .keys = {"h"},
                                                  .buckets = 4}));
  ASSERT_EQ(got.size(), 2u);
  const HistogramSeries* sa = Find(got, "h", "a");
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ(sa->count, 100);
  ASSERT_EQ(sa->steps.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const HistogramStep& s = sa->steps[size_t(i)];
    EXPECT_EQ(s.step, i * 25);
    EXPECT_EQ(s.last_step, i * 25 + 24);
    EXPECT_EQ(s.merged, 25);
    EXPECT_TRUE(s.exact);
    double last = 0;
    for (int k = i * 25; k < i * 25 + 25; ++k) last += k;
    EXPECT_EQ(s.value.counts, (std::vector<double>{25, 50, 75, last}));
  }
  // Writer b in 3 buckets (steps 0..32, 33..65, 66..99): the middle one holds both ranges and
  // is re-binned onto [0, 4] in 2 bins (approximate); the others are exact sums.
  COHORT_ASSERT_OK_AND_ASSIGN(
      got, store().QueryHistograms(HistogramQuery{.run = Ref("run1"), .keys = {"h"},
                                                  .writers = {"b"}, .buckets = 3}));
  ASSERT_EQ(got.size(), 1u);
  const std::vector<HistogramStep>& sb = got[0].steps;
  ASSERT_EQ(sb.size(), 3u);
  EXPECT_TRUE(sb[0].exact);
  EXPECT_EQ(sb[0].merged, 33);
  EXPECT_EQ(sb[0].value.counts, (std::vector<double>{33, 33}));
  EXPECT_FALSE(sb[1].exact);
  EXPECT_EQ(sb[1].value.lo, 0);
  EXPECT_EQ(sb[1].value.hi, 4);
  EXPECT_EQ(sb[1].value.counts, (std::vector<double>{34, 32}));  // 17 steps x 2, 16 x 2
  EXPECT_TRUE(sb[2].exact);
  EXPECT_EQ(sb[2].value.lo, 2);
  // A bound on what a query reads: writer b's 100 steps of 2 bins are 200 counts (uniform bins
  // carry no edges); buckets do not lower it (steps are read before they are merged).
  COHORT_ASSERT_OK(store()
                       .QueryHistograms(HistogramQuery{
                           .run = Ref("run1"), .keys = {"h"}, .writers = {"b"}, .max_values = 200})
                       .status());
  auto over = store().QueryHistograms(HistogramQuery{
      .run = Ref("run1"), .keys = {"h"}, .writers = {"b"}, .buckets = 3, .max_values = 199});
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge) << over.status().ToString();
  EXPECT_NE(over.status().message().find("--max-answer-points"), std::string::npos);
}

TEST_P(StoreConformanceTest, DumpRoundTripKeepsHistograms) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder bb(1);
  bb.AddHistogram({"h", 3, 7, Explicit({-0.0, 1, 2}, {0.25, 9})});
  bb.AddHistogram({"h", 4, 8, Uniform(-1, 1, {1, 2})});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", bb.Finish(), 1).status());
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, DumpCopy());
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts counts, copy->CountRows());
  EXPECT_EQ(counts["histograms"], 2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto a, store().QueryHistograms(HistogramQuery{.run = Ref("run1")}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto b, copy->QueryHistograms(HistogramQuery{.run = Ref("run1")}));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].steps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a[0].steps[i].step, b[0].steps[i].step);
    EXPECT_EQ(a[0].steps[i].time_ms, b[0].steps[i].time_ms);
    EXPECT_EQ(a[0].steps[i].value.lo, b[0].steps[i].value.lo);
    EXPECT_EQ(a[0].steps[i].value.hi, b[0].steps[i].value.hi);
    EXPECT_EQ(a[0].steps[i].value.edges, b[0].steps[i].value.edges);
    EXPECT_EQ(a[0].steps[i].value.counts, b[0].steps[i].value.counts);
  }
  EXPECT_TRUE(std::signbit(b[0].steps[0].value.edges[0]));
}

}  // namespace cohort::store

namespace cohort::store {
namespace {

// A batch of the key budget's cases at step `seq` under a budget of `max` keys: a row of
// `scalars`, a histogram of each of `hists` and an image of each of `media`.
IngestBatch KeyBatch(int64_t seq, int64_t max, const std::vector<std::string>& scalars,
                     const std::vector<std::string>& hists,
                     const std::vector<std::string>& media = {}) {
  IngestBatchBuilder b(seq);
  std::vector<IngestBatchBuilder::Cell> cells;
  for (const std::string& k : scalars) cells.emplace_back(k, 1.0);
  if (!cells.empty()) b.AddHistoryRow(seq, 1, cells);
  for (const std::string& k : hists) b.AddHistogram({k, seq, 1, Uniform(0, 1, {1, 2})});
  for (const std::string& k : media) {
    MediaPoint image;
    image.key = k;
    image.step = seq;
    image.type = "image";
    image.sha256 = std::string(64, 'a');
    image.size = 1;
    image.mime = "image/png";
    b.AddMedia(image);
  }
  b.batch().max_run_keys = max;
  return b.Finish();
}

}  // namespace

// Histogram and media keys are keys of the run: the key budget (max_run_keys) counts them with
// the scalar ones, so that they cannot grow a run's keys without bound.
TEST_P(StoreConformanceTest, HistogramKeysCountAgainstTheRunKeyBudget) {
  MakeRun("run1");
  Join("run1", "w");
  const RunRef ref = Ref("run1");
  auto batch = [](int64_t seq, std::vector<std::string> scalars, std::vector<std::string> hists) {
    return KeyBatch(seq, 3, scalars, hists);
  };
  ASSERT_TRUE(store().Ingest(ref, "w", batch(1, {"loss"}, {"grad/a"}), 1).ok());
  auto over = store().Ingest(ref, "w", batch(2, {}, {"grad/b", "grad/c"}), 2);  // 4 keys
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(over.status().message().find("holds 2 distinct keys"), std::string::npos)
      << over.status().ToString();
  EXPECT_NE(over.status().message().find("grad/b"), std::string::npos);
  // A scalar past the budget, with histogram keys already there, is refused too.
  ASSERT_TRUE(store().Ingest(ref, "w", batch(3, {}, {"grad/b"}), 3).ok());  // the 3rd key
  auto scalar = store().Ingest(ref, "w", batch(4, {"acc"}, {}), 4);
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.status().code(), StatusCode::kPayloadTooLarge);
  // Media keys are keys of the run as well.
  auto media = store().Ingest(ref, "w", KeyBatch(6, 3, {}, {}, {"samples"}), 6);
  ASSERT_FALSE(media.ok());
  EXPECT_EQ(media.status().code(), StatusCode::kPayloadTooLarge) << media.status().ToString();
  EXPECT_NE(media.status().message().find("samples"), std::string::npos);
  // Known keys at new steps are not new keys.
  EXPECT_TRUE(store().Ingest(ref, "w", batch(5, {"loss"}, {"grad/a", "grad/b"}), 5).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(auto hists, store().ListHistograms(ref));
  EXPECT_EQ(hists.size(), 2u);
}

// The store remembers the histogram and media keys a run holds (so that a batch does not look
// them up again): what it remembers must stay true across batches of several writers, a refused
// batch, a restart, and a deleted run whose pk a new run may get (SQLite reuses the largest).
TEST_P(StoreConformanceTest, KnownHistogramAndMediaKeysAreChargedOncePerRun) {
  auto batch = [](int64_t seq, std::vector<std::string> hists, std::vector<std::string> media) {
    return KeyBatch(seq, 2, {}, hists, media);
  };
  const RunRef ref = Ref("run1");
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", /*primary=*/false);
  ASSERT_TRUE(store().Ingest(ref, "a", batch(1, {"h"}, {}), 1).ok());
  ASSERT_TRUE(store().Ingest(ref, "a", batch(2, {"h"}, {}), 2).ok());  // known: not new
  // A refused batch's keys are not the run's: "x" is new again below.
  EXPECT_EQ(store().Ingest(ref, "a", batch(3, {"h"}, {"m", "x"}), 3).status().code(),
            StatusCode::kPayloadTooLarge);
  ASSERT_TRUE(store().Ingest(ref, "b", batch(1, {"h"}, {"m"}), 4).ok());  // another writer's
  for (int64_t seq = 4; seq < 8; ++seq) {
    ASSERT_TRUE(store().Ingest(ref, "a", batch(seq, {"h"}, {"m"}), seq).ok()) << seq;
  }
  EXPECT_EQ(store().Ingest(ref, "a", batch(8, {}, {"x"}), 8).status().code(),
            StatusCode::kPayloadTooLarge);
  Reopen();
  ASSERT_TRUE(store().Ingest(ref, "b", batch(2, {"h"}, {"m"}), 9).ok());
  EXPECT_EQ(store().Ingest(ref, "b", batch(3, {"x"}, {}), 10).status().code(),
            StatusCode::kPayloadTooLarge);
  // The run goes; the next one (maybe under the same pk) holds none of its keys.
  COHORT_ASSERT_OK(store().DeleteRun(ref));
  MakeRun("run2");
  Join("run2", "a");
  const RunRef ref2 = Ref("run2");
  ASSERT_TRUE(store().Ingest(ref2, "a", batch(1, {"p"}, {"q"}), 11).ok());  // 2 keys
  auto over = store().Ingest(ref2, "a", batch(2, {"h"}, {}), 12);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(over.status().message().find("(h"), std::string::npos) << over.status().ToString();
}

}  // namespace cohort::store
