#include "server/alerts/progress_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cohort::alerts {
namespace {

const store::RunRef kRun{"acme", "vision", "job"};
constexpr int64_t kT0 = 1'700'000'000'000;

// Every writer of `labels` logs one step per second for `seconds` seconds from t (steps
// first..), heartbeating as it goes.
void Advance(ProgressTracker& t, const std::vector<std::string>& labels, int64_t* now,
             int64_t* step, int seconds) {
  for (int i = 0; i < seconds; ++i) {
    *now += 1000;
    ++*step;
    for (const std::string& l : labels) t.OnBatch(kRun, l, *step, {}, *now);
  }
}

std::function<std::optional<ProgressTracker::HungParams>(const store::RunRef&)> Params(
    double factor, int64_t min_ms) {
  return [=](const store::RunRef&) {
    return std::optional<ProgressTracker::HungParams>(ProgressTracker::HungParams{factor, min_ms});
  };
}

TEST(ProgressTracker, AWriterStuckWhileOthersAdvanceIsHungAfterTheThreshold) {
  ProgressTracker t;
  int64_t now = kT0, step = 0;
  Advance(t, {"r0", "r1", "r2"}, &now, &step, 10);  // 1 s per step
  const int64_t stuck_step = step;
  // r2 stops; its agent keeps heartbeating; the others go on.
  for (int i = 0; i < 20; ++i) {
    now += 1000;
    ++step;
    t.OnBatch(kRun, "r0", step, {}, now);
    t.OnBatch(kRun, "r1", step, {}, now);
    t.OnHeartbeat(kRun, "r2", now);
    auto found = t.FindHung(now, Params(5, 10'000));
    if (i < 10) {  // stalled 10 s at i = 9: the 10 s minimum (factor 5 x 1 s is less) not passed
      EXPECT_TRUE(found.empty()) << i;
    } else {
      ASSERT_EQ(found.size(), 1u) << i;
      EXPECT_EQ(found[0].label, "r2");
      EXPECT_GT(found[0].stalled_ms, 10'000);
      EXPECT_EQ(found[0].threshold_ms, 10'000);
      EXPECT_NEAR(found[0].step_time_ms, 1000, 1);
      ASSERT_EQ(found[0].writers.size(), 1u);
      EXPECT_EQ(found[0].writers[0].last_step, stuck_step);
    }
  }
  // It advances again: not hung.
  t.OnBatch(kRun, "r2", step, {}, now);
  EXPECT_TRUE(t.FindHung(now, Params(5, 10'000)).empty());
}

TEST(ProgressTracker, AWholeJobStuckIsOneRunLevelFindingNamingTheWriterBehind) {
  ProgressTracker t;
  int64_t now = kT0, step = 0;
  Advance(t, {"r0", "r1"}, &now, &step, 10);
  t.OnBatch(kRun, "r0", step + 1, {}, now);  // r0 got one step further, r1 is stuck behind
  for (int i = 0; i < 30; ++i) {
    now += 1000;
    t.OnHeartbeat(kRun, "r0", now);
    t.OnHeartbeat(kRun, "r1", now);
  }
  auto found = t.FindHung(now, Params(3, 20'000));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].label, "");
  EXPECT_EQ(found[0].writers.size(), 2u);
  EXPECT_EQ(found[0].suspects, std::vector<std::string>{"r1"});
  // The writer behind is found on its own as well (its alert stays open: it has not advanced);
  // r0, whose step is the job's newest, is not.
  EXPECT_EQ(found[1].label, "r1");
  EXPECT_EQ(found[1].writers.at(0).last_step, step);
}

// Ranks waiting in a collective after the same step: the one whose batch with that step came a
// little earlier is not hung "while the others advanced" (they only caught up with it).
TEST(ProgressTracker, AWriterAtTheHighestStepIsWaitingNotHung) {
  ProgressTracker t;
  int64_t now = kT0, step = 0;
  Advance(t, {"r0", "r1", "r2"}, &now, &step, 10);
  t.OnBatch(kRun, "r0", step + 1, {}, now + 500);    // r0's step 11 reached the server first
  t.OnBatch(kRun, "r2", step + 1, {}, now + 2'500);  // r2's 2 s later; r1 stays at 10
  for (int i = 1; i <= 11; ++i) {
    const int64_t at = now + 2'000 + i * 1'000;
    for (const char* w : {"r0", "r1", "r2"}) t.OnHeartbeat(kRun, w, at);
    auto found = t.FindHung(at, Params(3, 10'000));
    for (const HungFinding& f : found) EXPECT_NE(f.label, "r0") << "at +" << i << " s";
    // r1, behind, is found on its own once past the minimum.
    if (i >= 9) {
      EXPECT_TRUE(std::any_of(found.begin(), found.end(),
                              [](const HungFinding& f) { return f.label == "r1"; }));
    }
  }
}

TEST(ProgressTracker, ALongEvaluationUnderTheMinimumIsNotHung) {
  ProgressTracker t;
  int64_t now = kT0, step = 0;
  Advance(t, {"r0", "r1"}, &now, &step, 10);
  for (int i = 0; i < 50; ++i) {  // a 50 s evaluation, every rank in it
    now += 1000;
    t.OnHeartbeat(kRun, "r0", now);
    t.OnHeartbeat(kRun, "r1", now);
    EXPECT_TRUE(t.FindHung(now, Params(5, 60'000)).empty()) << i;
  }
  Advance(t, {"r0", "r1"}, &now, &step, 3);
  EXPECT_TRUE(t.FindHung(now, Params(5, 60'000)).empty());
}

TEST(ProgressTracker, SilentWritersAndUnwatchedRunsAreNotHung) {
  ProgressTracker t;
  int64_t now = kT0, step = 0;
  Advance(t, {"r0", "r1"}, &now, &step, 10);
  now += ProgressTracker::kAliveMs + 1000;  // nobody heard of since
  EXPECT_TRUE(t.FindHung(now, Params(1, 0)).empty());
  EXPECT_TRUE(t.FindHung(now, [](const store::RunRef&) {
                 return std::optional<ProgressTracker::HungParams>();
               }).empty());
  t.Forget(kRun, "r0");
  t.Forget(kRun, "r1");
  EXPECT_EQ(t.writers(), 0u);
  EXPECT_TRUE(t.Projects().empty());
}

TEST(ProgressTracker, StaleKeysOfLiveWriters) {
  ProgressTracker t;
  t.OnBatch(kRun, "r0", 1, {"eval/acc", "loss"}, kT0);
  auto watch = [](const store::RunRef&, const std::string& key) -> std::optional<int64_t> {
    if (key == "eval/acc") return 60'000;
    return std::nullopt;
  };
  t.OnBatch(kRun, "r0", 2, {"loss"}, kT0 + 50'000);
  EXPECT_TRUE(t.FindStale(kT0 + 50'000, watch).empty());
  t.OnBatch(kRun, "r0", 3, {"loss"}, kT0 + 61'000);
  auto found = t.FindStale(kT0 + 61'000, watch);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].key, "eval/acc");
  EXPECT_EQ(found[0].label, "r0");
  EXPECT_EQ(found[0].last_point_ms, kT0);
  t.OnBatch(kRun, "r0", 4, {"eval/acc"}, kT0 + 62'000);
  EXPECT_TRUE(t.FindStale(kT0 + 62'000, watch).empty());
}

TEST(ProgressTracker, RankSamplesAreKeptPerLiveWriterAndBounded) {
  ProgressTracker t;
  for (int64_t s = 0; s < 10; ++s) {
    RankSamples rs{.clock = {{s, kT0 + s * 100, 0}},
                   .step_time_s = {0.1},
                   .gpu = {{kT0 + s * 60'000, s < 5 ? 0.0 : 90.0}},
                   .keep = 4};
    t.OnBatch(kRun, "r0", s, {}, kT0 + s * 60'000, &rs);
  }
  t.OnBatch(kRun, "r1", 3, {}, kT0);  // not heard of since: not live
  const int64_t now = kT0 + 9 * 60'000;
  auto runs = t.RankSnapshot(now, [](const store::RunRef&) { return true; });
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].writers.size(), 1u);
  const WriterRanks& w = runs[0].writers[0];
  EXPECT_EQ(w.label, "r0");
  ASSERT_EQ(w.clock.size(), 4u);  // the last `keep`
  EXPECT_EQ(w.clock.front().step, 6);
  EXPECT_EQ(w.clock.back().time_ms, kT0 + 900);
  EXPECT_EQ(w.step_time_s.size(), 4u);
  // GPU samples of the last 5 minutes (times 4..9 min): one at 0%, five at 90%.
  EXPECT_EQ(w.gpu_samples, 6);
  ASSERT_TRUE(w.gpu_util.has_value());
  EXPECT_NEAR(*w.gpu_util, 75, 1e-9);
  EXPECT_TRUE(t.RankSnapshot(now, [](const store::RunRef&) { return false; }).empty());
}

}  // namespace
}  // namespace cohort::alerts
