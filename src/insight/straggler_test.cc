#include "insight/straggler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace cohort::insight {
namespace {

// A member logging `steps` steps from `first_step`, `period_ms` apart (+- jitter), starting at
// `t0 + offset_ms`.
MemberSignals Clock(int64_t steps, double period_ms, int64_t offset_ms, std::mt19937_64* rng,
                    int64_t first_step = 0, int jitter_ms = 3) {
  MemberSignals m;
  const int64_t t0 = 1700000000000;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t jitter =
        jitter_ms ? int64_t((*rng)() % uint64_t(2 * jitter_ms + 1)) - jitter_ms : 0;
    m.clock.push_back(
        {first_step + s, t0 + offset_ms + int64_t(double(s) * period_ms) + jitter, 0.5});
  }
  return m;
}

TEST(StragglerTest, SlowStepTimeMemberIsTheOnlyOneFlagged) {
  std::mt19937_64 rng(1);
  std::vector<MemberSignals> in;
  for (int r = 0; r < 4; ++r) in.push_back(Clock(60, r == 2 ? 150 : 50, 0, &rng));
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  ASSERT_EQ(rep.stragglers, std::vector<int>{2});
  const MemberVerdict& slow = rep.members[2];
  EXPECT_TRUE(slow.step_time.flagged);
  EXPECT_EQ(slow.step_time.source, "timestamps");
  EXPECT_EQ(slow.step_time.n, 50);
  EXPECT_NEAR(slow.step_time.value, 150, 4);
  EXPECT_NEAR(slow.step_time.ratio, 3, 0.2);
  ASSERT_FALSE(slow.reasons.empty());
  EXPECT_NE(slow.reasons[0].find("step_time: "), std::string::npos);
  EXPECT_NEAR(rep.median_step_time_ms, 50, 3);
}

TEST(StragglerTest, UniformMembersFlagNobody) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<MemberSignals> in;
    for (int r = 0; r < 8; ++r) in.push_back(Clock(80, 40, int64_t(rng() % 3), &rng, 0, 4));
    StragglerReport rep = DetectStragglers(in, StragglerOptions{});
    EXPECT_TRUE(rep.stragglers.empty()) << "seed " << seed << ": " << rep.members[0].reasons.size();
    EXPECT_FALSE(rep.desync.flagged);
  }
}

TEST(StragglerTest, LateMemberInLockStepIsFlaggedByLag) {
  // Same period for everyone (a collective every step), member 1 reaches every step 60 ms late.
  std::mt19937_64 rng(3);
  std::vector<MemberSignals> in;
  for (int r = 0; r < 4; ++r) in.push_back(Clock(60, 80, r == 1 ? 60 : 0, &rng));
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  ASSERT_EQ(rep.stragglers, std::vector<int>{1});
  EXPECT_FALSE(rep.members[1].step_time.flagged);
  EXPECT_TRUE(rep.members[1].lag.flagged);
  EXPECT_NEAR(rep.members[1].lag.value, 60, 5);
  EXPECT_EQ(rep.members[1].lag.n, 50);
}

TEST(StragglerTest, ExplicitStepTimeWinsOverTimestamps) {
  std::mt19937_64 rng(4);
  std::vector<MemberSignals> in;
  for (int r = 0; r < 3; ++r) {
    in.push_back(Clock(30, 100, 0, &rng));
    for (int i = 0; i < 30; ++i) in.back().step_time_s.push_back(r == 0 ? 0.09 : 0.02);
  }
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  ASSERT_EQ(rep.stragglers, std::vector<int>{0});
  EXPECT_EQ(rep.members[0].step_time.source, "perf/step_time");
  EXPECT_DOUBLE_EQ(rep.members[0].step_time.value, 90);
}

TEST(StragglerTest, FewerThanMinMembersFlagNobody) {
  std::mt19937_64 rng(5);
  std::vector<MemberSignals> in{Clock(60, 50, 0, &rng), Clock(60, 500, 0, &rng)};
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  EXPECT_TRUE(rep.stragglers.empty());
  EXPECT_TRUE(rep.members[1].step_time.present);
  EXPECT_GT(rep.members[1].step_time.ratio, 1.5);  // evidence is still reported
}

TEST(StragglerTest, LowGpuUtilisationAndThroughputAreFlagged) {
  std::mt19937_64 rng(6);
  std::vector<MemberSignals> in;
  for (int r = 0; r < 5; ++r) {
    in.push_back(Clock(20, 50, 0, &rng));
    in.back().gpu_util = r == 4 ? 30.0 : 95.0 + r;
    in.back().throughput = {r == 3 ? 100.0 : 400.0 + r};
  }
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  ASSERT_EQ(rep.stragglers, (std::vector<int>{3, 4}));
  EXPECT_TRUE(rep.members[4].gpu_util.flagged);
  EXPECT_FALSE(rep.members[4].throughput.flagged);
  EXPECT_TRUE(rep.members[3].throughput.flagged);
  EXPECT_LT(rep.members[4].gpu_util.z, -3.5);
}

TEST(StragglerTest, ThresholdsComeFromOptions) {
  std::mt19937_64 rng(7);
  std::vector<MemberSignals> in;
  for (int r = 0; r < 4; ++r) in.push_back(Clock(60, r == 0 ? 65 : 50, 0, &rng, 0, 0));
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  EXPECT_TRUE(rep.members[0].step_time.flagged);
  StragglerOptions strict;
  strict.ratio = 1.5;  // 1.3x slower no longer counts as a slow step time
  rep = DetectStragglers(in, strict);
  EXPECT_FALSE(rep.members[0].step_time.flagged);
  EXPECT_TRUE(rep.members[0].lag.flagged);  // it still falls behind the others' steps
  strict.z = 1e6;
  EXPECT_TRUE(DetectStragglers(in, strict).stragglers.empty());
}

TEST(StragglerTest, DesyncFlaggedWhenStepsDriftApart) {
  std::mt19937_64 rng(8);
  std::vector<MemberSignals> in{Clock(100, 20, 0, &rng), Clock(100, 20, 0, &rng),
                                Clock(40, 50, 0, &rng)};
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  EXPECT_TRUE(rep.desync.flagged);
  EXPECT_EQ(rep.desync.step_gap, 60);
  EXPECT_EQ(rep.desync.ahead, 0);
  EXPECT_EQ(rep.desync.behind, 2);
  EXPECT_NE(rep.desync.reason.find("gap 60"), std::string::npos);
}

TEST(StragglerTest, FinishedMembersDoNotCountForDesync) {
  std::mt19937_64 rng(9);
  std::vector<MemberSignals> in{Clock(100, 20, 0, &rng), Clock(100, 20, 0, &rng),
                                Clock(40, 20, 0, &rng)};
  in[2].running = false;  // ended at step 39 (crashed, say): not a drift of the others
  StragglerReport rep = DetectStragglers(in, StragglerOptions{});
  EXPECT_FALSE(rep.desync.flagged);
  EXPECT_EQ(rep.desync.step_gap, 0);
}

TEST(StragglerTest, OptionsFromEnvironmentOverrideDefaults) {
  setenv("COHORT_STRAGGLER_Z", "5", 1);
  setenv("COHORT_STRAGGLER_WINDOW", "20", 1);
  setenv("COHORT_DESYNC_STEPS", "bogus", 1);
  StragglerOptions o = StragglerOptionsFromEnv();
  unsetenv("COHORT_STRAGGLER_Z");
  unsetenv("COHORT_STRAGGLER_WINDOW");
  unsetenv("COHORT_DESYNC_STEPS");
  EXPECT_EQ(o.z, 5);
  EXPECT_EQ(o.window, 20);
  EXPECT_EQ(o.desync_steps, 10);  // invalid values keep the default
  EXPECT_EQ(o.ratio, 1.2);
}

}  // namespace
}  // namespace cohort::insight
