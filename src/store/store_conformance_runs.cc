// Conformance cases: runs, writers and states, run lists, groups, projects, views, API keys and
// persistence.
#include <algorithm>
#include <map>
#include <set>

#include "core/clock.h"
#include "core/json.h"
#include "store/run_state.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

using ::testing::TestWithParam;

// The value of `key` in the JSON object `text`, serialized ("" when absent).
std::string JsonField(const std::string& text, const std::string& key) {
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_object()) return "";
  const auto* f = v->get_object().if_contains(key);
  return f ? json::Serialize(*f) : "";
}

std::vector<std::string> Ids(const RunPage& page) {
  std::vector<std::string> out;
  for (const RunRecord& r : page.runs) out.push_back(r.run_id);
  return out;
}

// ---- runs ----

TEST_P(StoreConformanceTest, CreateThenResumeKeepsIdAndMergesConfig) {
  RunUpsert u;
  u.ref = Ref("run1");
  u.name = "first";
  u.tags = std::vector<std::string>{"a", "b"};
  u.config_json = R"({"lr":0.1,"model":"resnet"})";
  COHORT_ASSERT_OK_AND_ASSIGN(auto created, store().UpsertRun(u));
  EXPECT_TRUE(created.second);
  EXPECT_EQ(created.first.run_id, "run1");
  EXPECT_EQ(created.first.state, RunState::kPending);
  EXPECT_GT(created.first.created_ms, 0);

  RunUpsert resume;
  resume.ref = Ref("run1");
  resume.config_json = R"({"lr":0.2,"epochs":3})";
  COHORT_ASSERT_OK_AND_ASSIGN(auto resumed, store().UpsertRun(resume));
  EXPECT_FALSE(resumed.second);
  EXPECT_EQ(resumed.first.pk, created.first.pk);
  EXPECT_EQ(resumed.first.name, "first");  // unset fields stay
  EXPECT_EQ(resumed.first.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(JsonField(resumed.first.config_json, "lr"), "2E-1");
  EXPECT_EQ(JsonField(resumed.first.config_json, "model"), "\"resnet\"");
  EXPECT_EQ(JsonField(resumed.first.config_json, "epochs"), "3");
  EXPECT_EQ(resumed.first.created_ms, created.first.created_ms);
}

// resume=never / must are decided in the upsert's transaction (the API checked with a read
// before it, so two creates of one id both passed and the second rewrote the first's run).
TEST_P(StoreConformanceTest, UpsertNeverCreatesOverAnExistingRunAndMustNeverCreates) {
  RunUpsert must;
  must.ref = Ref("run1");
  must.resume = ResumeMode::kMust;
  auto absent = store().UpsertRun(must);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetRun(Ref("run1")).status().code(), StatusCode::kNotFound);

  RunUpsert first;
  first.ref = Ref("run1");
  first.name = "first";
  first.resume = ResumeMode::kNever;
  COHORT_ASSERT_OK_AND_ASSIGN(auto created, store().UpsertRun(first));
  EXPECT_TRUE(created.second);
  RunUpsert second = first;
  second.name = "second";
  second.config_json = R"({"lr":1})";
  auto refused = store().UpsertRun(second);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kAlreadyExists);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord kept, store().GetRun(Ref("run1")));
  EXPECT_EQ(kept.name, "first");
  EXPECT_EQ(kept.config_json, "{}");
  must.name = "resumed";
  COHORT_ASSERT_OK_AND_ASSIGN(auto resumed, store().UpsertRun(must));
  EXPECT_FALSE(resumed.second);
  EXPECT_EQ(resumed.first.name, "resumed");
}

TEST_P(StoreConformanceTest, UpsertRejectsConfigThatIsNotAnObject) {
  RunUpsert u;
  u.ref = Ref("run1");
  u.config_json = "[1, 2]";
  auto r = store().UpsertRun(u);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store().GetRun(Ref("run1")).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, RandomRunIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    RunUpsert u;
    u.ref = Ref("");
    COHORT_ASSERT_OK_AND_ASSIGN(auto r, store().UpsertRun(u));
    EXPECT_TRUE(r.second);
    EXPECT_EQ(r.first.run_id.size(), 8u);
    EXPECT_TRUE(std::all_of(r.first.run_id.begin(), r.first.run_id.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
    }));
    ids.insert(r.first.run_id);
  }
  EXPECT_EQ(ids.size(), 50u);
}

TEST_P(StoreConformanceTest, RunOfAnotherEntityIsNotFound) {
  MakeRun("run1");
  RunRef other{"someone-else", kProject, "run1"};
  auto got = store().GetRun(other);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("run1"), std::string::npos);
  EXPECT_EQ(store().JoinWriter(other, WriterJoin{.label = "w"}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().Ingest(other, "w", Rows(1, "loss", 1), 1).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().DeleteRun(other).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store().GetRun(Ref("run1")).ok());
}

// A config value of None (an argparse default) is a value: a null in the config kept it out
// of the run (it deleted the key, at creation too). Keys leave the config by name; a null in
// the summary still deletes its key.
TEST_P(StoreConformanceTest, PatchRunMergesObjectsKeepsConfigNullsAndRemovesKeysByName) {
  RunUpsert u;
  u.ref = Ref("run1");
  u.config_json = R"({"a":1,"b":2,"seed":null})";
  ASSERT_TRUE(store().UpsertRun(u).ok());
  RunPatch p;
  p.notes = "hello";
  p.config_json = R"({"a":null,"c":3})";
  p.config_unset = {"b", "absent"};
  p.summary_json = R"({"loss":0.5,"gone":1})";
  p.tags = std::vector<std::string>{"best"};
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord r, store().PatchRun(Ref("run1"), p));
  EXPECT_EQ(r.notes, "hello");
  EXPECT_EQ(JsonField(r.config_json, "a"), "null");
  EXPECT_EQ(JsonField(r.config_json, "seed"), "null");
  EXPECT_EQ(JsonField(r.config_json, "b"), "");
  EXPECT_EQ(JsonField(r.config_json, "c"), "3");
  EXPECT_EQ(JsonField(r.summary_json, "loss"), "5E-1");
  EXPECT_EQ(r.tags, std::vector<std::string>{"best"});
  COHORT_ASSERT_OK_AND_ASSIGN(
      r, store().PatchRun(Ref("run1"), RunPatch{.summary_json = R"({"gone":null})",
                                                .config_unset = {"a"}}));
  EXPECT_EQ(JsonField(r.summary_json, "gone"), "");
  EXPECT_EQ(JsonField(r.config_json, "a"), "");
  EXPECT_EQ(JsonField(r.config_json, "seed"), "null");
  COHORT_ASSERT_OK_AND_ASSIGN(r, store().GetRun(Ref("run1")));
  EXPECT_EQ(JsonField(r.config_json, "seed"), "null");
  EXPECT_EQ(store().PatchRun(Ref("nope"), p).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, DeleteRunRemovesItsDataAndWriters) {
  MakeRun("run1");
  Join("run1", "w");
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", Rows(1, "loss", 5), 1).ok());
  COHORT_ASSERT_OK(store().DeleteRun(Ref("run1")));
  EXPECT_EQ(store().GetRun(Ref("run1")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().ListSeries(Ref("run1")).status().code(), StatusCode::kNotFound);
  // The id can be used again, starting empty.
  MakeRun("run1");
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  EXPECT_TRUE(series.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  EXPECT_TRUE(writers.empty());
}

// ---- writers and states ----

TEST_P(StoreConformanceTest, JoinAndRejoinWriterByLabel) {
  MakeRun("run1");
  WriterRecord w = Join("run1", "rank_0");
  EXPECT_EQ(w.label, "rank_0");
  EXPECT_EQ(w.state, RunState::kRunning);
  EXPECT_EQ(w.host, "node-1");
  EXPECT_EQ(w.next_step, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kRunning);
  EXPECT_EQ(run.writer_count, 1);

  ASSERT_TRUE(store().Ingest(Ref("run1"), "rank_0", Rows(1, "loss", 3), NowMillis()).ok());
  ASSERT_TRUE(
      store()
          .FinishWriter(Ref("run1"), "rank_0", RunState::kCrashed, std::nullopt, NowMillis())
          .ok());
  WriterJoin again{.label = "rank_0", .host = "node-2", .pid = 7, .gpu_ids = {0, 1}};
  COHORT_ASSERT_OK_AND_ASSIGN(WriterRecord rejoined, store().JoinWriter(Ref("run1"), again));
  EXPECT_EQ(rejoined.pk, w.pk);
  EXPECT_EQ(rejoined.state, RunState::kRunning);
  EXPECT_FALSE(rejoined.exit_code.has_value());
  EXPECT_EQ(rejoined.host, "node-2");
  EXPECT_EQ(rejoined.pid, 7);
  EXPECT_EQ(rejoined.gpu_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(rejoined.next_step, 3);
  EXPECT_EQ(rejoined.last_seq, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kRunning);
  EXPECT_EQ(run.writer_count, 1);

  Join("run1", "rank_1", false, false);
  COHORT_ASSERT_OK_AND_ASSIGN(run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.writer_count, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  ASSERT_EQ(writers.size(), 2u);
}

TEST_P(StoreConformanceTest, JoinWriterWithEmptyLabelIsInvalid) {
  MakeRun("run1");
  EXPECT_EQ(store().JoinWriter(Ref("run1"), WriterJoin{}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, PlainRunFinishesWithItsWriter) {
  MakeRun("run1");
  Join("run1", "main");
  COHORT_ASSERT_OK_AND_ASSIGN(
      WriterRecord w, store().FinishWriter(Ref("run1"), "main", RunState::kFailed, 2, 5000));
  EXPECT_EQ(w.state, RunState::kFailed);
  EXPECT_EQ(w.exit_code, 2);
  EXPECT_EQ(w.finished_ms, 5000);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kFailed);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.finished_ms, 5000);
  EXPECT_EQ(store().FinishWriter(Ref("run1"), "ghost", RunState::kFinished, 0, 1).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().FinishWriter(Ref("run1"), "main", RunState::kRunning, 0, 1).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, SharedRunFollowsPrimaryNotWorkers) {
  MakeRun("run1");
  Join("run1", "rank_1", false, false);  // a worker joins before the primary
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kRunning);
  Join("run1", "rank_0", true, true);
  Join("run1", "rank_2", false, false);
  ASSERT_TRUE(
      store().FinishWriter(Ref("run1"), "rank_1", RunState::kCrashed, std::nullopt, 100).ok());
  ASSERT_TRUE(store().FinishWriter(Ref("run1"), "rank_2", RunState::kFinished, 0, 110).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kRunning);
  ASSERT_TRUE(store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 200).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kFinished);
  EXPECT_EQ(run.exit_code, 0);
  // Workers' own states stay visible.
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  std::map<std::string, RunState> states;
  for (const auto& w : writers) states[w.label] = w.state;
  EXPECT_EQ(states["rank_1"], RunState::kCrashed);
  EXPECT_EQ(states["rank_2"], RunState::kFinished);
}

TEST_P(StoreConformanceTest, WorkerWithUpdateFinishStateEndsSharedRun) {
  MakeRun("run1");
  Join("run1", "rank_0", true, true);
  Join("run1", "rank_1", false, true);
  ASSERT_TRUE(store().FinishWriter(Ref("run1"), "rank_0", RunState::kFinished, 0, 100).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kRunning);
  ASSERT_TRUE(store().FinishWriter(Ref("run1"), "rank_1", RunState::kKilled, 130, 200).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.state, RunState::kKilled);
  EXPECT_EQ(run.exit_code, 130);
}

TEST_P(StoreConformanceTest, MarkStaleWritersCrashedMarksOnlyStaleOnes) {
  MakeRun("run1");
  MakeRun("run2");
  Join("run1", "alive");
  Join("run1", "dead", false, false);
  Join("run2", "dead2");
  const int64_t now = NowMillis() + 60'000;
  COHORT_ASSERT_OK(store().Heartbeat(Ref("run1"), "alive", now).status());
  EXPECT_EQ(store().Heartbeat(Ref("run1"), "ghost", now).status().code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(StaleSweep swept, store().MarkStaleWritersCrashed(now - 30'000, now));
  ASSERT_EQ(swept.crashed.size(), 2u);
  EXPECT_TRUE(swept.orphans_ended.empty());
  std::set<std::string> marked_writers;
  for (const CrashedWriter& c : swept.crashed) {
    EXPECT_EQ(c.run.entity, kEntity);
    EXPECT_EQ(c.run.project, kProject);
    EXPECT_LT(c.heartbeat_ms, now - 30'000);
    marked_writers.insert(c.run.run_id + "/" + c.label);
  }
  EXPECT_EQ(marked_writers, (std::set<std::string>{"run1/dead", "run2/dead2"}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  for (const auto& w : writers) {
    EXPECT_EQ(w.state, w.label == "alive" ? RunState::kRunning : RunState::kCrashed) << w.label;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run1, store().GetRun(Ref("run1")));
  EXPECT_EQ(run1.state, RunState::kRunning);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run2, store().GetRun(Ref("run2")));
  EXPECT_EQ(run2.state, RunState::kCrashed);
  // Crashed writers are not marked again.
  COHORT_ASSERT_OK_AND_ASSIGN(swept, store().MarkStaleWritersCrashed(now - 30'000, now));
  EXPECT_TRUE(swept.crashed.empty());
}

TEST_P(StoreConformanceTest, HeartbeatsMoveManyWritersForwardAndSkipUnknownOnes) {
  MakeRun("run1");
  MakeRun("run2");
  Join("run1", "a");
  Join("run1", "b", false, false);
  Join("run1", "stale", false, false);
  Join("run2", "c");
  const int64_t now = NowMillis() + 60'000;
  COHORT_ASSERT_OK(
      store().Heartbeat(Ref("run1"), "b", now + 500).status());  // newer than the batch's
  const std::vector<HeartbeatUpdate> updates = {
      {Ref("run1"), "a", now},
      {Ref("run1"), "b", now + 100},  // older than b's last: b keeps now + 500
      {Ref("run2"), "c", now + 200},
      {Ref("run1"), "ghost", now},  // no such writer: skipped
      {Ref("nope"), "a", now},      // no such run: skipped
  };
  COHORT_ASSERT_OK_AND_ASSIGN(HeartbeatsApplied applied, store().Heartbeats(updates));
  EXPECT_EQ(applied.updated, 3);
  EXPECT_TRUE(applied.revived.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  std::map<std::string, int64_t> seen;
  for (const auto& w : writers) seen[w.label] = w.heartbeat_ms;
  EXPECT_EQ(seen["a"], now);
  EXPECT_EQ(seen["b"], now + 500);
  EXPECT_LT(seen["stale"], now);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers2, store().ListWriters(Ref("run2")));
  EXPECT_EQ(writers2[0].heartbeat_ms, now + 200);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run1, store().GetRun(Ref("run1")));
  EXPECT_EQ(run1.heartbeat_ms, now + 500);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run2, store().GetRun(Ref("run2")));
  EXPECT_EQ(run2.heartbeat_ms, now + 200);
  // The crash sweep sees them: only "stale" is marked.
  COHORT_ASSERT_OK_AND_ASSIGN(StaleSweep swept, store().MarkStaleWritersCrashed(now - 1, now));
  ASSERT_EQ(swept.crashed.size(), 1u);
  EXPECT_EQ(swept.crashed[0].label, "stale");
  COHORT_ASSERT_OK_AND_ASSIGN(applied, store().Heartbeats({}));
  EXPECT_EQ(applied.updated, 0);
}

// A shared run whose primary never joined (it died before its init reached the server) ends
// once the sweep finds it silent: with its workers' most severe end. A run with a primary, or a
// worker still running, is left to them.
TEST_P(StoreConformanceTest, TheSweepEndsARunWhoseWritersAllEndedWithoutAPrimary) {
  MakeRun("orphan");
  MakeRun("led");
  MakeRun("busy");
  Join("orphan", "rank_1", false, false);
  Join("orphan", "rank_2", false, false);
  Join("led", "rank_0");
  Join("led", "rank_1", false, false);
  Join("busy", "rank_1", false, false);
  Join("busy", "rank_2", false, false);
  const int64_t now = NowMillis();
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("orphan"), "rank_1", RunState::kFinished, 0, now).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("orphan"), "rank_2", RunState::kKilled, 143, now + 1).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("led"), "rank_1", RunState::kFinished, 0, now).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("busy"), "rank_1", RunState::kFinished, 0, now).status());
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord orphan, store().GetRun(Ref("orphan")));
  EXPECT_EQ(orphan.state, RunState::kRunning);  // workers never end a run by themselves
  // Not silent yet: nothing changes.
  COHORT_ASSERT_OK_AND_ASSIGN(StaleSweep swept, store().MarkStaleWritersCrashed(now - 60'000, now));
  EXPECT_TRUE(swept.crashed.empty());
  EXPECT_TRUE(swept.orphans_ended.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(orphan, store().GetRun(Ref("orphan")));
  EXPECT_EQ(orphan.state, RunState::kRunning);
  // Silent for the timeout: "busy"'s running worker is marked crashed and ends its run with the
  // orphan's; "led" waits for its primary (marked crashed too, which ends it as a primary does).
  const int64_t later = now + 600'000;
  COHORT_ASSERT_OK(store().Heartbeat(Ref("led"), "rank_0", later).status());
  COHORT_ASSERT_OK_AND_ASSIGN(swept, store().MarkStaleWritersCrashed(later - 300'000, later));
  ASSERT_EQ(swept.crashed.size(), 1u);
  EXPECT_EQ(swept.crashed[0].run.run_id, "busy");
  // The runs it ended are returned: no writer end carries the orphan's (its writers' ends were
  // recorded before the run ended).
  std::set<std::string> ended;
  for (const RunRef& r : swept.orphans_ended) {
    EXPECT_EQ(r.entity, kEntity);
    EXPECT_EQ(r.project, kProject);
    ended.insert(r.run_id);
  }
  EXPECT_EQ(ended, (std::set<std::string>{"busy", "orphan"}));
  COHORT_ASSERT_OK_AND_ASSIGN(orphan, store().GetRun(Ref("orphan")));
  EXPECT_EQ(orphan.state, RunState::kKilled);
  EXPECT_EQ(orphan.exit_code, 143);
  EXPECT_EQ(orphan.finished_ms, now + 1);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord busy, store().GetRun(Ref("busy")));
  EXPECT_EQ(busy.state, RunState::kCrashed);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord led, store().GetRun(Ref("led")));
  EXPECT_EQ(led.state, RunState::kRunning);
  // The primary joins after all: the run follows it again.
  Join("orphan", "rank_0");
  COHORT_ASSERT_OK_AND_ASSIGN(orphan, store().GetRun(Ref("orphan")));
  EXPECT_EQ(orphan.state, RunState::kRunning);
}

// A heartbeat comes from a live writer: one the sweep marked crashed after a silence (the server
// was down longer than the heartbeat timeout) is running again, and so is its run; a writer that
// ended with an exit code, or whose crash was recorded after the heartbeat, stays ended.
TEST_P(StoreConformanceTest, AHeartbeatBringsBackAWriterTheSweepMarkedCrashed) {
  MakeRun("run1");
  MakeRun("run2");
  Join("run1", "main");
  Join("run1", "worker", false, false);
  Join("run2", "main");
  const int64_t now = NowMillis() + 60'000;
  COHORT_ASSERT_OK_AND_ASSIGN(StaleSweep swept, store().MarkStaleWritersCrashed(now, now));
  ASSERT_EQ(swept.crashed.size(), 3u);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run1, store().GetRun(Ref("run1")));
  ASSERT_EQ(run1.state, RunState::kCrashed);

  // A heartbeat written late (sent before the mark, or by a server whose clock runs ahead)
  // revives nothing.
  COHORT_ASSERT_OK_AND_ASSIGN(
      bool revived, store().Heartbeat(Ref("run1"), "main", now + kReviveAfterCrashMs - 1));
  EXPECT_FALSE(revived);
  // One by one (the compat layer's path): the controlling writer comes back, then the run.
  const int64_t back = now + kReviveAfterCrashMs;
  COHORT_ASSERT_OK_AND_ASSIGN(revived, store().Heartbeat(Ref("run1"), "main", back + 1));
  EXPECT_TRUE(revived);
  COHORT_ASSERT_OK_AND_ASSIGN(run1, store().GetRun(Ref("run1")));
  EXPECT_EQ(run1.state, RunState::kRunning);
  EXPECT_FALSE(run1.finished_ms.has_value());
  COHORT_ASSERT_OK_AND_ASSIGN(revived, store().Heartbeat(Ref("run1"), "main", back + 2));
  EXPECT_FALSE(revived);  // running already
  // Coalesced (the agents' path): the worker comes back; its end is no longer unhandled.
  COHORT_ASSERT_OK_AND_ASSIGN(
      HeartbeatsApplied applied,
      store().Heartbeats({{Ref("run1"), "worker", back + 3}, {Ref("run1"), "main", back + 3}}));
  EXPECT_EQ(applied.updated, 2);
  ASSERT_EQ(applied.revived.size(), 1u);
  EXPECT_EQ(applied.revived[0].label, "worker");
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  for (const WriterRecord& w : writers) {
    EXPECT_EQ(w.state, RunState::kRunning) << w.label;
    EXPECT_FALSE(w.finished_ms.has_value()) << w.label;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto ends, store().ListUnhandledWriterEnds(100));
  for (const EndedWriter& e : ends) EXPECT_NE(e.run.run_id, "run1") << e.label;

  // Ended for good: a crash with an exit code, a finish, a crash recorded after the heartbeat.
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "worker", RunState::kCrashed, 137, back + 4).status());
  COHORT_ASSERT_OK(
      store().FinishWriter(Ref("run1"), "main", RunState::kFinished, 0, back + 4).status());
  COHORT_ASSERT_OK_AND_ASSIGN(applied, store().Heartbeats({{Ref("run1"), "worker", now + 5},
                                                           {Ref("run1"), "main", now + 5},
                                                           {Ref("run2"), "main", now - 1}}));
  EXPECT_EQ(applied.updated, 3);
  EXPECT_TRUE(applied.revived.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(run1, store().GetRun(Ref("run1")));
  EXPECT_EQ(run1.state, RunState::kFinished);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run2, store().GetRun(Ref("run2")));
  EXPECT_EQ(run2.state, RunState::kCrashed);
}

// ---- run lists ----

// Five runs with distinct fields for filter tests.
class RunFixtureData {
 public:
  static void Make(Store& s) {
    struct Spec {
      const char* id;
      const char* name;
      const char* group;
      const char* job_type;
      std::vector<std::string> tags;
      const char* config;
    };
    const Spec specs[] = {
        {"r1", "alpha-main", "exp1", "main", {"best", "v1"}, R"({"lr":0.1,"opt":"adam"})"},
        {"r2", "alpha-worker", "exp1", "worker", {"v1"}, R"({"lr":0.01,"opt":"sgd"})"},
        {"r3", "beta-main", "exp2", "main", {}, R"({"lr":1,"opt":"adam","nested":{"d":4}})"},
        {"r4", "beta-worker", "exp2", "worker", {"v2"}, R"({"lr":"1e-3"})"},
        {"r5", "gamma", "", "", {}, R"({})"},
    };
    for (const Spec& sp : specs) {
      RunUpsert u;
      u.ref = RunRef{"acme", "vision", sp.id};
      u.name = sp.name;
      u.group = sp.group;
      u.job_type = sp.job_type;
      u.tags = sp.tags;
      u.host = std::string(sp.id) == "r3" ? "gpu-2" : "gpu-1";
      u.config_json = sp.config;
      ASSERT_TRUE(s.UpsertRun(u).ok());
    }
  }
};

TEST_P(StoreConformanceTest, ListRunsFiltersWithEachOp) {
  RunFixtureData::Make(store());
  Join("r2", "w");
  ASSERT_TRUE(store().FinishWriter(Ref("r2"), "w", RunState::kCrashed, std::nullopt, 1).ok());
  Join("r4", "w");
  ASSERT_TRUE(store().PatchRun(Ref("r1"), RunPatch{.summary_json = R"({"acc":0.9})"}).ok());
  ASSERT_TRUE(store().PatchRun(Ref("r3"), RunPatch{.summary_json = R"({"acc":0.7})"}).ok());

  auto list = [&](std::vector<Filter> filters) -> std::vector<std::string> {
    RunQuery q{.entity = kEntity, .project = kProject, .filters = std::move(filters)};
    q.sort = "name";
    q.descending = false;
    auto page = store().ListRuns(q);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? Ids(*page) : std::vector<std::string>{"<error>"};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(list({{"job_type", "==", {"worker"}}}), (V{"r2", "r4"}));
  EXPECT_EQ(list({{"job_type", "!=", {"worker"}}}), (V{"r1", "r3", "r5"}));
  EXPECT_EQ(list({{"group", "in", {"exp1", "exp2"}}}), (V{"r1", "r2", "r3", "r4"}));
  EXPECT_EQ(list({{"group", "not in", {"exp1"}}}), (V{"r3", "r4", "r5"}));
  EXPECT_EQ(list({{"name", "~", {"main"}}}), (V{"r1", "r3"}));
  EXPECT_EQ(list({{"name", "<", {"beta"}}}), (V{"r1", "r2"}));
  EXPECT_EQ(list({{"name", ">", {"beta-worker"}}}), (V{"r5"}));
  EXPECT_EQ(list({{"host", "==", {"gpu-2"}}}), (V{"r3"}));
  EXPECT_EQ(list({{"state", "in", {"crashed"}}}), (V{"r2"}));
  EXPECT_EQ(list({{"state", "==", {"running"}}}), (V{"r4"}));
  EXPECT_EQ(list({{"job_type", "==", {"worker"}}, {"state", "in", {"crashed"}}}), (V{"r2"}));
  EXPECT_EQ(list({{"tag", "==", {"v1"}}}), (V{"r1", "r2"}));
  EXPECT_EQ(list({{"tag", "in", {"best", "v2"}}}), (V{"r1", "r4"}));
  EXPECT_EQ(list({{"tag", "!=", {"v1"}}}), (V{"r3", "r4", "r5"}));
  EXPECT_EQ(list({{"tag", "not in", {"v1", "v2"}}}), (V{"r3", "r5"}));
  EXPECT_EQ(list({{"tag", "~", {"es"}}}), (V{"r1"}));
  EXPECT_EQ(list({{"config.opt", "==", {"adam"}}}), (V{"r1", "r3"}));
  EXPECT_EQ(list({{"config.opt", "!=", {"adam"}}}), (V{"r2", "r4", "r5"}));
  EXPECT_EQ(list({{"config.lr", "==", {"0.1"}}}), (V{"r1"}));
  EXPECT_EQ(list({{"config.lr", "==", {"1e-3"}}}), (V{"r4"}));  // stored as a string
  EXPECT_EQ(list({{"config.lr", "in", {"1", "0.01"}}}), (V{"r2", "r3"}));
  EXPECT_EQ(list({{"config.lr", "not in", {"1", "0.01"}}}), (V{"r1", "r4", "r5"}));
  EXPECT_EQ(list({{"config.lr", "<", {"0.5"}}}), (V{"r1", "r2"}));
  EXPECT_EQ(list({{"config.lr", ">", {"0.05"}}}), (V{"r1", "r3"}));
  EXPECT_EQ(list({{"config.opt", "~", {"ad"}}}), (V{"r1", "r3"}));
  EXPECT_EQ(list({{"config.nested.d", "==", {"4"}}}), (V{"r3"}));
  EXPECT_EQ(list({{"summary.acc", ">", {"0.8"}}}), (V{"r1"}));
  EXPECT_EQ(list({{"summary.acc", "<", {"0.8"}}}), (V{"r3"}));
}

TEST_P(StoreConformanceTest, ListRunsFiltersByCreationAndUpdateTime) {
  std::vector<int64_t> created;
  for (const char* id : {"t1", "t2", "t3"}) {
    created.push_back(MakeRun(id).created_ms);
    const int64_t t = NowMillis();
    while (NowMillis() == t) {  // distinct creation times
    }
  }
  auto list = [&](std::vector<Filter> filters) -> std::vector<std::string> {
    RunQuery q{.entity = kEntity, .project = kProject, .filters = std::move(filters)};
    q.sort = "created";
    q.descending = false;
    auto page = store().ListRuns(q);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? Ids(*page) : std::vector<std::string>{"<error>"};
  };
  using V = std::vector<std::string>;
  const std::string second = std::to_string(created[1]);
  EXPECT_EQ(list({{"created", ">", {second}}}), (V{"t3"}));
  EXPECT_EQ(list({{"created", "<", {second}}}), (V{"t1"}));
  EXPECT_EQ(list({{"created", "==", {second}}}), (V{"t2"}));
  EXPECT_EQ(list({{"created", "!=", {second}}}), (V{"t1", "t3"}));
  EXPECT_EQ(list({{"updated", ">", {std::to_string(created[0] - 1)}}}), (V{"t1", "t2", "t3"}));
  RunQuery bad{.entity = kEntity, .project = kProject, .filters = {{"created", ">", {"2024-01"}}}};
  auto r = store().ListRuns(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("milliseconds"), std::string::npos);
  bad.filters = {{"created", "~", {"1"}}};
  EXPECT_EQ(store().ListRuns(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ListRunsRejectsUnknownFieldOrOp) {
  RunQuery q{.entity = kEntity, .project = kProject};
  q.filters = {{"colour", "==", {"red"}}};
  auto r = store().ListRuns(q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("colour"), std::string::npos);
  q.filters = {{"name", "=~", {"x"}}};
  r = store().ListRuns(q);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("=~"), std::string::npos);
  q.filters = {{"tag", "<", {"x"}}};
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
  q.filters = {{"state", "==", {"sleeping"}}};
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
  q.filters = {};
  q.sort = "colour";
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
  q.sort = "created";
  q.cursor = "zz";
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ListRunsPagesEverySortWithoutGapsOrDuplicates) {
  // 23 runs; names, groups and job types repeat so that the tiebreak matters.
  for (int i = 0; i < 23; ++i) {
    RunUpsert u;
    u.ref = Ref("run" + std::to_string(i));
    u.name = "n" + std::to_string(i % 4);
    u.group = "g" + std::to_string(i % 3);
    u.job_type = i % 2 ? "worker" : "main";
    ASSERT_TRUE(store().UpsertRun(u).ok());
    if (i % 5 == 0) Join(u.ref.run_id, "w");
  }
  for (const char* sort : {"created", "updated", "name", "state", "group", "job_type", "runtime"}) {
    for (bool descending : {true, false}) {
      RunQuery q{.entity = kEntity,
                 .project = kProject,
                 .sort = sort,
                 .descending = descending,
                 .limit = 5};
      std::vector<std::string> seen;
      std::vector<RunRecord> rows;
      int pages = 0;
      while (true) {
        COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
        EXPECT_EQ(page.total, 23);
        for (const auto& r : page.runs) {
          seen.push_back(r.run_id);
          rows.push_back(r);
        }
        ++pages;
        if (page.next_cursor.empty()) break;
        ASSERT_LT(pages, 10);
        q.cursor = page.next_cursor;
      }
      EXPECT_EQ(pages, 5) << sort;
      std::set<std::string> unique(seen.begin(), seen.end());
      EXPECT_EQ(seen.size(), 23u) << sort << (descending ? " desc" : " asc");
      EXPECT_EQ(unique.size(), 23u) << sort << (descending ? " desc" : " asc");
      if (std::string(sort) == "name") {
        for (size_t i = 1; i < rows.size(); ++i) {
          EXPECT_TRUE(descending ? rows[i - 1].name >= rows[i].name
                                 : rows[i - 1].name <= rows[i].name);
        }
      }
      if (std::string(sort) == "created") {
        for (size_t i = 1; i < rows.size(); ++i) {
          EXPECT_TRUE(descending ? rows[i - 1].created_ms >= rows[i].created_ms
                                 : rows[i - 1].created_ms <= rows[i].created_ms);
        }
      }
    }
  }
}

TEST_P(StoreConformanceTest, ListRunsCountsTotalOfAllPages) {
  RunFixtureData::Make(store());
  RunQuery q{.entity = kEntity, .project = kProject, .limit = 2};
  q.filters = {{"job_type", "in", {"main", "worker"}}};
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
  EXPECT_EQ(page.runs.size(), 2u);
  EXPECT_EQ(page.total, 4);
  EXPECT_FALSE(page.next_cursor.empty());
  RunQuery other{.entity = kEntity, .project = "empty"};
  COHORT_ASSERT_OK_AND_ASSIGN(page, store().ListRuns(other));
  EXPECT_TRUE(page.runs.empty());
  EXPECT_EQ(page.total, 0);
  EXPECT_TRUE(page.next_cursor.empty());
}

TEST_P(StoreConformanceTest, ListRunsRejectsCursorOfAnotherSort) {
  RunFixtureData::Make(store());
  RunQuery q{.entity = kEntity, .project = kProject, .sort = "name", .limit = 2};
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
  ASSERT_FALSE(page.next_cursor.empty());
  q.sort = "created";
  q.cursor = page.next_cursor;
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ListGroupsCountsRunsStatesAndJobTypes) {
  RunFixtureData::Make(store());
  Join("r2", "w");
  COHORT_ASSERT_OK_AND_ASSIGN(auto groups, store().ListGroups(kEntity, kProject));
  ASSERT_EQ(groups.size(), 2u);  // r5 has no group
  EXPECT_EQ(groups[0].group, "exp1");
  EXPECT_EQ(groups[0].runs, 2);
  EXPECT_EQ(groups[0].states["pending"], 1);
  EXPECT_EQ(groups[0].states["running"], 1);
  EXPECT_EQ(groups[0].job_types["main"], 1);
  EXPECT_EQ(groups[0].job_types["worker"], 1);
  EXPECT_GT(groups[0].created_ms, 0);
  EXPECT_GE(groups[0].updated_ms, groups[0].created_ms);
  EXPECT_EQ(groups[1].group, "exp2");
  EXPECT_EQ(groups[1].runs, 2);
  EXPECT_EQ(groups[1].states["pending"], 2);
}

TEST_P(StoreConformanceTest, ListProjectsCountsRunsPerProject) {
  MakeRun("a");
  MakeRun("b");
  ASSERT_TRUE(store().UpsertRun(RunUpsert{.ref = {kEntity, "audio", "c"}}).ok());
  ASSERT_TRUE(store().UpsertRun(RunUpsert{.ref = {"other", "secret", "d"}}).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(auto projects, store().ListProjects(kEntity));
  ASSERT_EQ(projects.size(), 2u);
  EXPECT_EQ(projects[0].project, "audio");
  EXPECT_EQ(projects[0].runs, 1);
  EXPECT_EQ(projects[1].project, "vision");
  EXPECT_EQ(projects[1].runs, 2);
  EXPECT_EQ(projects[1].entity, kEntity);
}

// ---- views and keys ----

TEST_P(StoreConformanceTest, ViewsCreateListUpdateDelete) {
  ViewRecord v{.entity = kEntity,
               .project = kProject,
               .name = "default: hide workers",
               .spec_json = R"({"filters":[{"field":"job_type","op":"!=","values":["worker"]}]})"};
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord created, store().CreateView(v));
  EXPECT_GT(created.id, 0);
  EXPECT_EQ(created.name, v.name);
  EXPECT_EQ(store().CreateView(v).status().code(), StatusCode::kAlreadyExists);
  ViewRecord v2 = v;
  v2.name = "all nodes";
  v2.spec_json = "{}";
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord created2, store().CreateView(v2));
  COHORT_ASSERT_OK_AND_ASSIGN(auto views, store().ListViews(kEntity, kProject));
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].name, "all nodes");

  created.spec_json = R"({"group_by":"group"})";
  created.name = "renamed";
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord updated, store().UpdateView(created));
  EXPECT_EQ(updated.spec_json, created.spec_json);
  EXPECT_EQ(updated.name, "renamed");
  created2.name = "renamed";
  EXPECT_EQ(store().UpdateView(created2).status().code(), StatusCode::kAlreadyExists);
  ViewRecord foreign = updated;
  foreign.entity = "other";
  EXPECT_EQ(store().UpdateView(foreign).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store()
                .CreateView(ViewRecord{
                    .entity = kEntity, .project = kProject, .name = "x", .spec_json = "[]"})
                .status()
                .code(),
            StatusCode::kInvalidArgument);

  COHORT_ASSERT_OK(store().DeleteView(kEntity, kProject, created.id));
  EXPECT_EQ(store().DeleteView(kEntity, kProject, created.id).code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(views, store().ListViews(kEntity, kProject));
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].id, created2.id);
}

// Two people editing one saved view: the second save was applied over the first (last writer
// wins, the first edit lost without a word). An edit names the version it was based on
// (updated_ms, which every update moves); one based on an older version is refused, nothing
// saved.
TEST_P(StoreConformanceTest, AViewEditBasedOnAnOlderVersionIsRefused) {
  COHORT_ASSERT_OK_AND_ASSIGN(
      ViewRecord loaded, store().CreateView(ViewRecord{.entity = kEntity,
                                                       .project = kProject,
                                                       .name = "shared",
                                                       .spec_json = R"({"sort":"-created"})"}));
  ViewRecord alice = loaded, bob = loaded;
  alice.spec_json = R"({"sort":"name"})";
  bob.spec_json = R"({"group_by":"group"})";
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord saved, store().UpdateView(alice));
  EXPECT_GT(saved.updated_ms, loaded.updated_ms);  // within the same millisecond too
  auto lost = store().UpdateView(bob);
  EXPECT_EQ(lost.status().code(), StatusCode::kFailedPrecondition) << lost.status().ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(auto views, store().ListViews(kEntity, kProject));
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].spec_json, alice.spec_json);
  EXPECT_EQ(views[0].updated_ms, saved.updated_ms);
  // Based on the version now stored it goes; without a version (0) it always goes.
  bob.updated_ms = saved.updated_ms;
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord again, store().UpdateView(bob));
  EXPECT_EQ(again.spec_json, bob.spec_json);
  EXPECT_GT(again.updated_ms, saved.updated_ms);
  alice.updated_ms = 0;
  COHORT_ASSERT_OK_AND_ASSIGN(ViewRecord forced, store().UpdateView(alice));
  EXPECT_EQ(forced.spec_json, alice.spec_json);
  // A view that is gone is still not found, whatever version the edit names.
  COHORT_ASSERT_OK(store().DeleteView(kEntity, kProject, loaded.id));
  bob.updated_ms = forced.updated_ms;
  EXPECT_EQ(store().UpdateView(bob).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, ApiKeysFindAndRevoke) {
  ApiKeyRecord k{
      .entity = kEntity, .name = "ci", .role = KeyRole::kAdmin, .hash = "h1", .prefix = "ck_ab"};
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord created, store().CreateApiKey(k));
  EXPECT_GT(created.id, 0);
  EXPECT_EQ(store().CreateApiKey(k).status().code(), StatusCode::kAlreadyExists);
  ApiKeyRecord k2{.entity = kEntity, .name = "laptop", .hash = "h2"};
  ASSERT_TRUE(store().CreateApiKey(k2).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t count, store().CountApiKeys());
  EXPECT_EQ(count, 2);

  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord found, store().FindApiKey("h1"));
  EXPECT_EQ(found.id, created.id);
  EXPECT_EQ(found.role, KeyRole::kAdmin);
  EXPECT_EQ(found.prefix, "ck_ab");
  EXPECT_EQ(store().FindApiKey("nope").status().code(), StatusCode::kNotFound);

  EXPECT_EQ(store().RevokeApiKey("other", created.id).code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK(store().RevokeApiKey(kEntity, created.id));
  EXPECT_EQ(store().FindApiKey("h1").status().code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(auto keys, store().ListApiKeys(kEntity));
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys[0].revoked);
  EXPECT_FALSE(keys[1].revoked);
  EXPECT_EQ(keys[1].role, KeyRole::kMember);
  COHORT_ASSERT_OK_AND_ASSIGN(keys, store().ListApiKeys("other"));
  EXPECT_TRUE(keys.empty());
}

// ---- persistence ----

TEST_P(StoreConformanceTest, BatchPastTheRunKeyLimitIsRefusedWhole) {
  MakeRun("run1");
  Join("run1", "w");
  Join("run1", "v", false, false);
  auto batch = [](int64_t seq, std::vector<std::string> keys) {
    IngestBatchBuilder b(seq);
    std::vector<IngestBatchBuilder::Cell> cells;
    for (const std::string& k : keys) cells.emplace_back(k, 1.0);
    b.AddHistoryRow(kAssignStep, 1, cells);
    b.batch().max_run_keys = 3;
    return b.Finish();
  };
  const RunRef ref = Ref("run1");
  ASSERT_TRUE(store().Ingest(ref, "w", batch(1, {"a", "b"}), 1).ok());
  ASSERT_TRUE(store().Ingest(ref, "v", batch(1, {"a", "b", "c"}), 1).ok());  // c: the 3rd key
  auto over = store().Ingest(ref, "w", batch(2, {"a", "d"}), 2);             // d: the 4th
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  const std::string run_name = ref.entity + "/" + ref.project + "/" + ref.run_id;
  EXPECT_NE(over.status().message().find(run_name + " holds 3 distinct keys"), std::string::npos)
      << over.status().ToString();
  EXPECT_NE(over.status().message().find("limit is 3 distinct keys per run"), std::string::npos);
  // Nothing of it was stored, not even the known key's point, and its seq is free.
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(ref));
  EXPECT_EQ(series.size(), 5u);  // a, b for w; a, b, c for v
  for (const SeriesInfo& s : series) EXPECT_EQ(s.count, 1) << s.key << " " << s.writer;
  COHORT_ASSERT_OK_AND_ASSIGN(auto again, store().Ingest(ref, "w", batch(2, {"a", "c"}), 2));
  EXPECT_FALSE(again.duplicate);  // c is known to the run (v's): not a new key
  // Without a limit any number goes.
  IngestBatch free = batch(3, {"d", "e", "f"});
  free.max_run_keys = 0;
  EXPECT_TRUE(store().Ingest(ref, "w", free, 3).ok());
}

TEST_P(StoreConformanceTest, DataSurvivesReopen) {
  RunUpsert u;
  u.ref = Ref("run1");
  u.config_json = R"({"lr":0.1})";
  ASSERT_TRUE(store().UpsertRun(u).ok());
  Join("run1", "w");
  IngestBatch b = Rows(1, "loss", 100);
  b.console.push_back(ConsoleLine{.time_ms = 5, .text = "hello"});
  ASSERT_TRUE(store().Ingest(Ref("run1"), "w", b, 10).ok());
  ASSERT_TRUE(
      store().CreateView(ViewRecord{.entity = kEntity, .project = kProject, .name = "v"}).ok());
  ASSERT_TRUE(store().CreateApiKey(ApiKeyRecord{.entity = kEntity, .hash = "h"}).ok());

  Reopen();
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(JsonField(run.config_json, "lr"), "1E-1");
  EXPECT_EQ(run.state, RunState::kRunning);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0].points.size(), 100u);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "hello");
  COHORT_ASSERT_OK_AND_ASSIGN(auto views, store().ListViews(kEntity, kProject));
  EXPECT_EQ(views.size(), 1u);
  EXPECT_TRUE(store().FindApiKey("h").ok());
  // The writer resumes where it stopped: the same seq is still a duplicate.
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult again, store().Ingest(Ref("run1"), "w", b, 20));
  EXPECT_TRUE(again.duplicate);
  EXPECT_EQ(again.next_step, 100);
}

}  // namespace
}  // namespace cohort::store
