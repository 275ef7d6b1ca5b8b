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

WriterRecord WithSteps(WriterRecord w, int64_t next_step) {
  w.next_step = next_step;
  return w;
}

TEST(RunStateTest, ResumedRunWithANewLabelContinuesAfterTheEarlierWriter) {
  // Process 1 (host-ab12) logged steps 0..4 and finished; process 2 joins as host-cd34.
  WriterRecord first = WithSteps(Writer("host-ab12", true, true), 5);
  End(&first, RunState::kFinished, 0, 100);
  const WriterRecord second = Writer("host-cd34", true, true);
  EXPECT_EQ(JoinNextStep(second, {first}), 5);
  EXPECT_EQ(JoinNextStep(second, {first, second}), 5);  // listed after its join
  // A process killed before its writer was marked ended (a preemption) counts the same.
  WriterRecord killed = WithSteps(Writer("host-ab12", true, true), 7);
  EXPECT_EQ(JoinNextStep(second, {killed}), 7);
  // Over several resumes: past the highest.
  EXPECT_EQ(JoinNextStep(second, {first, WithSteps(Writer("host-ef56", true, true), 9)}), 9);
}

TEST(RunStateTest, ReJoiningWriterKeepsItsOwnStepsWhenAhead) {
  const WriterRecord self = WithSteps(Writer("w", true, true), 12);
  EXPECT_EQ(JoinNextStep(self, {self}), 12);
  EXPECT_EQ(JoinNextStep(self, {self, WithSteps(Writer("old", true, true), 5)}), 12);
  EXPECT_EQ(JoinNextStep(Writer("new", true, true), {}), 0);  // a new run
}

TEST(RunStateTest, SharedRunRanksKeepTheirOwnSteps) {
  // Workers never continue another writer's steps; rank 0 (the one primary) ignores workers.
  const WriterRecord rank0 = WithSteps(Writer("rank_0", true, true), 3);
  const WriterRecord rank1 = WithSteps(Writer("rank_1", false, false), 40);
  const WriterRecord rank2 = Writer("rank_2", false, false);
  EXPECT_EQ(JoinNextStep(rank2, {rank0, rank1, rank2}), 0);
  EXPECT_EQ(JoinNextStep(rank1, {rank0, rank1}), 40);
  EXPECT_EQ(JoinNextStep(Writer("rank_0", true, true), {rank1}), 0);
  EXPECT_EQ(JoinNextStep(rank0, {rank0, rank1}), 3);
  // A forked child (not primary) of a resumed run starts at 0 as before.
  EXPECT_EQ(JoinNextStep(Writer("host-ab12-4242", false, false), {rank0}), 0);
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
