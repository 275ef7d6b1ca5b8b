#include "store/run_state.h"

#include <gtest/gtest.h>

namespace cohort::store {
namespace {

WriterRecord Writer(std::string label, bool primary, bool update_finish_state) {
  WriterRecord w;
  w.label = std::move(label);
  w.primary = primary;
  w.update_finish_state = update_finish_state;
  w.state = RunState::kRunning;
  return w;
}

void End(WriterRecord* w, RunState state, std::optional<int> exit_code, int64_t at_ms) {
  w->state = state;
  w->exit_code = exit_code;
  w->finished_ms = at_ms;
}

TEST(RunStateTest, PlainRunFollowsItsWriter) {
  std::vector<WriterRecord> ws = {Writer("w", true, true)};
  EXPECT_EQ(DeriveRunState(ws, RunState::kPending).state, RunState::kRunning);
  End(&ws[0], RunState::kFinished, 0, 100);
  DerivedRunState d = DeriveRunState(ws, RunState::kRunning);
  EXPECT_EQ(d.state, RunState::kFinished);
  EXPECT_EQ(d.exit_code, 0);
  EXPECT_EQ(d.finished_ms, 100);
}

TEST(RunStateTest, NoWritersKeepsCurrentState) {
  EXPECT_EQ(DeriveRunState({}, RunState::kPending).state, RunState::kPending);
}

TEST(RunStateTest, SharedRunStaysRunningWhenWorkerCrashesAndFinishesWithPrimary) {
  std::vector<WriterRecord> ws = {Writer("rank_0", true, true), Writer("rank_1", false, false)};
  End(&ws[1], RunState::kCrashed, std::nullopt, 50);
  EXPECT_EQ(DeriveRunState(ws, RunState::kRunning).state, RunState::kRunning);
  End(&ws[0], RunState::kFinished, 0, 100);
  DerivedRunState d = DeriveRunState(ws, RunState::kRunning);
  EXPECT_EQ(d.state, RunState::kFinished);
  EXPECT_EQ(d.exit_code, 0);
  EXPECT_EQ(d.finished_ms, 100);
}

TEST(RunStateTest, WorkerWithUpdateFinishStateEndsRun) {
  std::vector<WriterRecord> ws = {Writer("rank_0", true, true), Writer("rank_1", false, true)};
  End(&ws[0], RunState::kFinished, 0, 100);
  // rank_1 controls the run too, so the run runs until it ends.
  EXPECT_EQ(DeriveRunState(ws, RunState::kRunning).state, RunState::kRunning);
  End(&ws[1], RunState::kKilled, 143, 200);
  DerivedRunState d = DeriveRunState(ws, RunState::kRunning);
  EXPECT_EQ(d.state, RunState::kKilled);
  EXPECT_EQ(d.exit_code, 143);
  EXPECT_EQ(d.finished_ms, 200);
}

TEST(RunStateTest, WorkersBeforePrimaryNeverEndRun) {
  std::vector<WriterRecord> ws = {Writer("rank_1", false, false), Writer("rank_2", false, false)};
  EXPECT_EQ(DeriveRunState(ws, RunState::kPending).state, RunState::kRunning);
  End(&ws[0], RunState::kFinished, 0, 10);
  End(&ws[1], RunState::kCrashed, std::nullopt, 20);
  DerivedRunState d = DeriveRunState(ws, RunState::kRunning);
  EXPECT_EQ(d.state, RunState::kRunning);
  EXPECT_FALSE(d.exit_code.has_value());
  // The primary joins later and its end ends the run.
  ws.push_back(Writer("rank_0", true, true));
  EXPECT_EQ(DeriveRunState(ws, RunState::kRunning).state, RunState::kRunning);
  End(&ws[2], RunState::kFinished, 0, 30);
  EXPECT_EQ(DeriveRunState(ws, RunState::kRunning).state, RunState::kFinished);
}

// A shared run whose primary never joined: once the sweep finds it silent, its workers' most
// severe end ends it; nothing while a worker runs or a controlling writer exists.
TEST(RunStateTest, AnOrphanedRunEndsWithItsWorkersMostSevereEnd) {
  std::vector<WriterRecord> ws = {Writer("rank_1", false, false), Writer("rank_2", false, false),
                                  Writer("rank_3", false, false)};
  EXPECT_FALSE(DeriveOrphanedRunEnd(ws).has_value());  // running
  End(&ws[0], RunState::kFinished, 0, 10);
  End(&ws[1], RunState::kFailed, 2, 20);
  EXPECT_FALSE(DeriveOrphanedRunEnd(ws).has_value());  // rank_3 runs
  End(&ws[2], RunState::kFinished, 0, 30);
  std::optional<DerivedRunState> d = DeriveOrphanedRunEnd(ws);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->state, RunState::kFailed);
  EXPECT_EQ(d->exit_code, 2);
  EXPECT_EQ(d->finished_ms, 30);
  End(&ws[0], RunState::kCrashed, std::nullopt, 5);
  d = DeriveOrphanedRunEnd(ws);
  EXPECT_EQ(d->state, RunState::kCrashed);
  EXPECT_FALSE(d->exit_code.has_value());
  End(&ws[0], RunState::kFinished, 0, 10);
  End(&ws[1], RunState::kFinished, 0, 20);
  EXPECT_FALSE(DeriveOrphanedRunEnd(ws).has_value());  // all finished: the primary may come
  EXPECT_FALSE(DeriveOrphanedRunEnd({}).has_value());
  ws.push_back(Writer("rank_0", true, true));  // the primary joined: it ends the run
  End(&ws[3], RunState::kFinished, 0, 40);
  EXPECT_FALSE(DeriveOrphanedRunEnd(ws).has_value());
}

TEST(RunStateTest, FailedPrimaryPropagatesExitCode) {
  std::vector<WriterRecord> ws = {Writer("rank_0", true, true), Writer("rank_1", false, false)};
  End(&ws[1], RunState::kFinished, 0, 90);
  End(&ws[0], StateForExitCode(3), 3, 100);
  DerivedRunState d = DeriveRunState(ws, RunState::kRunning);
  EXPECT_EQ(d.state, RunState::kFailed);
  EXPECT_EQ(d.exit_code, 3);
}

TEST(RunStateTest, LastEndedControllingWriterWins) {
  std::vector<WriterRecord> ws = {Writer("a", true, true), Writer("b", false, true)};
  End(&ws[1], RunState::kFailed, 1, 300);
  End(&ws[0], RunState::kFinished, 0, 100);
  EXPECT_EQ(DeriveRunState(ws, RunState::kRunning).state, RunState::kFailed);
}

TEST(RunStateTest, StateForExitCodeMapsZeroToFinished) {
  EXPECT_EQ(StateForExitCode(0), RunState::kFinished);
  EXPECT_EQ(StateForExitCode(1), RunState::kFailed);
  EXPECT_EQ(StateForExitCode(-9), RunState::kFailed);
}

TEST(RunStateTest, StateNamesRoundTrip) {
  for (RunState s : {RunState::kPending, RunState::kRunning, RunState::kFinished, RunState::kFailed,
                     RunState::kCrashed, RunState::kKilled, RunState::kPreempted}) {
    EXPECT_EQ(ParseRunState(RunStateName(s)), s);
  }
  EXPECT_EQ(RunStateName(RunState::kPreempted), "preempted");
  EXPECT_FALSE(ParseRunState("Running").has_value());
  EXPECT_FALSE(ParseRunState("").has_value());
}

}  // namespace
}  // namespace cohort::store
