// End-to-end tests of the client library: Init -> Log -> Finish against a fake Cohort server,
// through a private agent and through the spawned shared agent (the stand-in binary from
// src/agent), including a server that is down at Init, an agent killed mid-run, console capture
// and fork.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/fake_cohort_server_for_test.h"
#include "client/run_fixture_for_test.h"
#include "cohort/cohort.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using agent::testing::FakeCohortServer;
using agent::testing::FakeHttpServer;

class RunTest : public client::testing::RunFixture {
 protected:
  RunTest() : RunFixture("/tmp/cohort-run-XXXXXX") {}

  int AgentPid() { return client::testing::SharedAgentPid(root_); }

  static void LogSteps(cohort::Run& run, int from, int to) {
    for (int step = from; step < to; ++step) {
      Values v;
      for (int k = 0; k < 10; ++k) v.emplace_back("k" + std::to_string(k), step * 10.0 + k);
      run.Log(v);
    }
  }
};

// "inprocess" (the mode's old name) is a private agent: another process, over a socketpair; no
// shared agent is started.
TEST_F(RunTest, InProcessRunUploadsEveryPointThroughAPrivateAgent) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->entity(), "alice");
  EXPECT_FALSE(run->offline());
  LogSteps(*run, 0, 1000);
  EXPECT_EQ(run->step(), 1000);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 10000u);
  EXPECT_EQ(server.points().at({"w0", "k3", 512}), 5123.0);
  EXPECT_EQ(server.writers().at("w0").state, "finished");
  EXPECT_EQ(server.overwritten_points(), 0);
  EXPECT_EQ(AgentPid(), 0);  // no shared agent
}

// The shared agent's socket cannot be used (its directory would be a regular file): the run
// starts a private agent and uploads everything all the same.
TEST_F(RunTest, ARunWhoseSharedAgentSocketIsUnusableStillUploads) {
  FakeCohortServer server;
  { std::ofstream(root_ + "/not-a-dir") << "x"; }
  setenv("COHORT_AGENT_SOCKET", (root_ + "/not-a-dir/agent.sock").c_str(), 1);
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  LogSteps(*run, 0, 100);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 1000u);
  EXPECT_EQ(server.writers().at("w0").state, "finished");
}

// A private agent outlives its training process to finish the uploads: here the server comes up
// only after the process exited.
TEST_F(RunTest, APrivateAgentFinishesTheUploadsAfterItsProcessExited) {
  const int port = FakeHttpServer::FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  setenv("COHORT_BACKOFF_MAX_S", "0.3", 1);
  std::string probe_url = url;
  char* argv[] = {const_cast<char*>(COHORT_TEST_EXIT_PROBE_BIN), probe_url.data(),
                  const_cast<char*>("return"), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  unsetenv("COHORT_BACKOFF_MAX_S");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  FakeCohortServer server(port);
  EXPECT_TRUE(WaitFor([&] { return server.writers().count("w0") &&
                                   server.writers().at("w0").state == "failed"; },
                      20000));
  EXPECT_EQ(server.point_count("w0"), 10u);
}

TEST_F(RunTest, AgentRunUploadsEveryPointAndAgentExitsWhenIdle) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  int agent = AgentPid();
  EXPECT_GT(agent, 0);
  LogSteps(*run, 0, 1000);
  ASSERT_TRUE(run->Finish(3).ok());
  EXPECT_EQ(server.point_count("w0"), 10000u);
  EXPECT_EQ(server.writers().at("w0").state, "failed");
  EXPECT_EQ(server.writers().at("w0").exit_code, 3);
  // Idle for COHORT_AGENT_IDLE_S: the agent goes, and removes the finished writer's WAL.
  EXPECT_TRUE(WaitFor([&] { return kill(agent, 0) != 0; }, 10000));
  EXPECT_FALSE(fs::exists(root_ + "/data/" + run->id()));
}

TEST_F(RunTest, SecondInitReusesTheRunningAgent) {
  FakeCohortServer server;
  auto a = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(a.ok());
  int agent = AgentPid();
  Settings s = Base(server.url(), "agent");
  s.label = "w1";
  int64_t start = NowMillis();
  auto b = Init(s);
  ASSERT_TRUE(b.ok());
  EXPECT_LT(NowMillis() - start, 1000);
  EXPECT_EQ(AgentPid(), agent);
  ASSERT_TRUE(a->Finish().ok());
  ASSERT_TRUE(b->Finish().ok());
}

TEST_F(RunTest, ServerDownAtInitThenDataArrivesWhenItStarts) {
  int port = FakeHttpServer::FreePort();
  Settings s = Base("http://127.0.0.1:" + std::to_string(port), "agent");
  s.init_timeout_s = 5;
  int64_t start = NowMillis();
  auto run = Init(s);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_LT(NowMillis() - start, 5000);
  EXPECT_TRUE(run->offline());
  LogSteps(*run, 0, 100);
  FakeCohortServer server(port);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return server.point_count("w0") == 1000; }, 30000));
  EXPECT_TRUE(WaitFor([&] { return server.writers()["w0"].state == "finished"; }, 5000));
}

TEST_F(RunTest, AgentKilledMidRunLosesNothing) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok());
  LogSteps(*run, 0, 500);
  ASSERT_TRUE(WaitFor([&] { return server.point_count("w0") > 0; }, 5000));
  int agent = AgentPid();
  ASSERT_GT(agent, 0);
  ASSERT_EQ(kill(agent, SIGKILL), 0);
  LogSteps(*run, 500, 1000);
  int64_t start = NowMillis();
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_LT(NowMillis() - start, 10000);
  EXPECT_NE(AgentPid(), agent);
  EXPECT_TRUE(WaitFor([&] { return server.point_count("w0") == 10000; }, 15000))
      << server.point_count("w0");
  EXPECT_EQ(server.overwritten_points(), 0);
  EXPECT_EQ(server.writers().at("w0").state, "finished");
}

TEST_F(RunTest, RefusedRunFailsInit) {
  FakeCohortServer server;
  server.set_run_exists(true);
  Settings s = Base(server.url(), "inprocess");
  s.resume = "never";
  auto run = Init(s);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(RunTest, WrongKeyFailsInit) {
  FakeHttpServer server([](const agent::testing::FakeRequest&) -> agent::testing::FakeResponse {
    return {401, R"({"error":{"code":"unauthenticated","message":"unknown key"}})", {}};
  });
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(RunTest, SetupStartsTheAgent) {
  EXPECT_EQ(AgentPid(), 0);
  ASSERT_TRUE(cohort::Setup(Base("http://127.0.0.1:1", "agent")).ok());
  EXPECT_GT(AgentPid(), 0);
}

TEST_F(RunTest, ConsoleLinesAreCapturedAndProgressBarsCollapse) {
  FakeCohortServer server;
  Settings s = Base(server.url(), "inprocess");
  s.capture_console = true;
  auto run = Init(s);
  ASSERT_TRUE(run.ok());
  printf("hello from stdout\n");
  printf("\r 10%%\r 50%%\r100%%\n");
  fflush(stdout);
  fprintf(stderr, "careful\n");
  run->Print("printed by hand");
  ASSERT_TRUE(run->Finish().ok());
  std::vector<std::string> lines;
  for (const auto& [label, text] : server.console()) lines.push_back(text);
  auto has = [&](const std::string& t) {
    return std::find(lines.begin(), lines.end(), t) != lines.end();
  };
  EXPECT_TRUE(has("hello from stdout"));
  EXPECT_TRUE(has("100%"));
  EXPECT_FALSE(has(" 10%"));
  EXPECT_TRUE(has("careful"));
  EXPECT_TRUE(has("printed by hand"));
}

TEST_F(RunTest, ForkedChildLogsUnderItsOwnLabel) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok());
  LogSteps(*run, 0, 10);
  pid_t child = fork();
  if (child == 0) {
    LogSteps(*run, 0, 20);
    Status s = run->Finish();
    _exit(s.ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  LogSteps(*run, 10, 30);
  ASSERT_TRUE(run->Finish().ok());
  std::string child_label = "w0-" + std::to_string(child);
  EXPECT_TRUE(WaitFor([&] { return server.point_count(child_label) == 200; }, 10000));
  EXPECT_EQ(server.point_count("w0"), 300u);
  EXPECT_FALSE(server.writers().at(child_label).primary);
}

TEST_F(RunTest, SystemMetricsAreSampledForTheWriter) {
  FakeCohortServer server;
  Settings s = Base(server.url(), "agent");
  s.stats_sampling_interval_s = 0.2;
  auto run = Init(s);
  ASSERT_TRUE(run.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return server.system_keys("w0").count("memory") == 1; }, 5000));
  EXPECT_EQ(server.system_keys("w0").count("proc.memory.rss_mb"), 1u);
}

TEST_F(RunTest, FirstSystemSampleComesWithoutWaitingAnInterval) {
  FakeCohortServer server;
  Settings s = Base(server.url(), "agent");
  s.stats_sampling_interval_s = 60;
  auto run = Init(s);
  ASSERT_TRUE(run.ok());
  // The first sample is due 1 s after the writer opened (slack for a loaded machine); the
  // next one only a minute later.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return server.system_keys("w0").count("memory") == 1; }, 5000));
}

TEST_F(RunTest, DisabledRunIsANoOp) {
  Settings s;
  s.mode = "disabled";
  auto run = Init(s);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->disabled());
  run->Log({{"x", 1}});
  EXPECT_TRUE(run->Finish().ok());
}

TEST_F(RunTest, FinishIsIdempotentAndLaterLogsAreIgnored) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok());
  LogSteps(*run, 0, 5);
  ASSERT_TRUE(run->Finish().ok());
  LogSteps(*run, 5, 10);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 50u);
}

TEST_F(RunTest, PrimaryConfigReachesTheRun) {
  FakeCohortServer server;
  Settings s = Base(server.url(), "inprocess");
  s.config_json = R"({"lr":0.1})";
  auto run = Init(s);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(run->UpdateConfig(R"({"batch":32})").ok());
  EXPECT_FALSE(run->UpdateConfig("[1]").ok());
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.run_config(), R"({"lr":1E-1,"batch":32})");
}

TEST_F(RunTest, InternedKeysLogEveryPointAndInvalidOnesAreDropped) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok());
  const KeyId loss = run->Key("loss"), acc = run->Key("acc"), bad = run->Key("");
  EXPECT_TRUE(loss.valid());
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(run->Key("loss").index, loss.index);
  for (int step = 0; step < 100; ++step) {
    const Point points[] = {{loss, 1.0 / (step + 1)}, {acc, step * 0.01}, {bad, 1}};
    run->Log(points);
  }
  run->Log({{"loss", 7.0}});  // the string form shares the key table
  EXPECT_EQ(run->step(), 101);
  EXPECT_EQ(run->dropped(), 100);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 201u);
  EXPECT_EQ(server.points().at({"w0", "loss", 3}), 0.25);
  EXPECT_EQ(server.points().at({"w0", "acc", 50}), 0.5);
  EXPECT_EQ(server.points().at({"w0", "loss", 100}), 7.0);
}

// Parses the fake server's merged JSON text.
bj::object ParseObject(const std::string& text) {
  auto v = json::Parse(text);
  EXPECT_TRUE(v.ok() && v->is_object()) << text;
  return v.ok() && v->is_object() ? v->as_object() : bj::object();
}

// A key set through UpdateSummary keeps the value set until it is logged again: the last write
// wins, as in the vendor's SDK (the set key was skipped for good: a later log never reached the
// summary). LastLoggedValues() shows the keys whose last write was a log.
TEST_F(RunTest, SummaryKeepsTheLastWriteOfEachKeyLogOrSet) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok());
  for (int step = 0; step < 50; ++step) {
    run->Log({{"loss", 100.0 - step}, {"acc", step / 100.0}, {"lr", 0.5}});
  }
  ASSERT_TRUE(run->UpdateSummary(R"({"acc": 0.99, "lr": 0.25})").ok());
  EXPECT_EQ(run->LastLoggedValues(), (std::map<std::string, double>{{"loss", 51.0}}));
  for (int step = 50; step < 60; ++step) run->Log({{"loss", 100.0 - step}, {"acc", 0.1}});
  run->Log({{"nan_metric", std::nan("")}, {"inf_metric", -HUGE_VAL}});
  const std::map<std::string, double> last = run->LastLoggedValues();
  EXPECT_EQ(last.size(), 4u);
  EXPECT_EQ(last.at("acc"), 0.1);   // logged after it was set: the log wins
  EXPECT_EQ(last.count("lr"), 0u);  // set after its last log: the set value wins
  EXPECT_TRUE(std::isnan(last.at("nan_metric")));
  ASSERT_TRUE(run->Finish().ok());
  bj::object summary = ParseObject(server.run_summary());
  ASSERT_TRUE(summary.contains("loss")) << server.run_summary();
  EXPECT_EQ(*json::ToDouble(summary.at("loss")), 41.0);
  EXPECT_EQ(*json::ToDouble(summary.at("acc")), 0.1) << server.run_summary();
  EXPECT_EQ(*json::ToDouble(summary.at("lr")), 0.25) << server.run_summary();
  EXPECT_EQ(summary["nan_metric"], "NaN");
  EXPECT_EQ(summary["inf_metric"], "-Infinity");
}

// A key the server refuses (here the reserved system/ prefix) is dropped at the call and counted;
// before, it reached a batch that the agent acknowledged and the server then refused whole,
// losing every other key of that batch.
TEST_F(RunTest, AKeyTheServerRefusesIsDroppedAtTheCallAndTheRestOfTheBatchArrives) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "agent"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (int step = 0; step < 20; ++step) {
    run->Log({{"loss", double(step)}, {"system/gpu.0.temp", 50.0}, {"acc", step / 20.0}});
  }
  EXPECT_EQ(run->dropped(), 20);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 40u);
  EXPECT_EQ(server.points().count({"w0", "loss", 19}), 1u);
  EXPECT_TRUE(server.system_keys("w0").empty());
}

TEST_F(RunTest, SharedWorkerSendsNoLastValueSummary) {
  FakeCohortServer server;
  Settings s = Base(server.url(), "inprocess");
  s.shared = true;
  s.primary = false;
  s.update_finish_state = false;
  s.run_id = "sharedrun";
  auto run = Init(s);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  run->Log({{"loss", 1.0}});
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.point_count("w0"), 1u);
  EXPECT_EQ(server.run_summary(), "{}");
}

TEST_F(RunTest, NameTagsAndNotesChangeAfterInit) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->name(), "fake-run");
  ASSERT_TRUE(run->SetName("renamed").ok());
  EXPECT_EQ(run->name(), "renamed");
  ASSERT_TRUE(run->SetTags({"baseline", "ddp"}).ok());
  ASSERT_TRUE(run->SetNotes("second try").ok());
  ASSERT_TRUE(run->SetGroup("g1").ok());
  ASSERT_TRUE(run->SetJobType("worker").ok());
  EXPECT_EQ(run->SetName("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run->SetName(std::string(257, 'x')).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run->SetTags({"ok", std::string("\xff\xfe")}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run->name(), "renamed");
  ASSERT_TRUE(run->Finish().ok());
  bj::object fields = ParseObject(server.run_fields());
  EXPECT_EQ(fields["name"], "renamed");
  EXPECT_EQ(fields["notes"], "second try");
  EXPECT_EQ(fields["group"], "g1");
  EXPECT_EQ(fields["job_type"], "worker");
  EXPECT_EQ(fields["tags"], (bj::array{"baseline", "ddp"}));
  EXPECT_EQ(run->SetNotes("late").code(), StatusCode::kFailedPrecondition);
}

// Runs the exit probe (exit_probe_main.cc) against `server` and returns its wait status.
int RunExitProbe(const FakeCohortServer& server, const char* mode) {
  std::string url = server.url();
  char* argv[] = {const_cast<char*>(COHORT_TEST_EXIT_PROBE_BIN), url.data(),
                  const_cast<char*>(mode), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

TEST_F(RunTest, ReturnFromMainFinishesWithItsExitCode) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "return");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  EXPECT_EQ(server.point_count("w0"), 10u);
  EXPECT_EQ(server.writers().at("w0").state, "failed");
  EXPECT_EQ(server.writers().at("w0").exit_code, 5);
}

TEST_F(RunTest, ExitCallFinishesWithItsExitCode) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "exit");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(server.point_count("w0"), 10u);
  EXPECT_EQ(server.writers().at("w0").state, "failed");
  EXPECT_EQ(server.writers().at("w0").exit_code, 7);
}

TEST_F(RunTest, UncaughtExceptionMarksTheWriterCrashed) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "throw");
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(server.point_count("w0"), 10u);
  EXPECT_EQ(server.writers().at("w0").state, "crashed");
  EXPECT_EQ(server.writers().at("w0").exit_code, 134);
}

TEST_F(RunTest, SigtermMarksTheWriterKilledAndTheProcessStillDiesOfIt) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "sigterm");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(server.point_count("w0"), 10u);
  EXPECT_EQ(server.writers().at("w0").state, "killed");
  EXPECT_EQ(server.writers().at("w0").exit_code, 143);
}

TEST_F(RunTest, SigtermRunsTheProgramsOwnHandlerAfterFinishing) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "sigterm-user");
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_EQ(server.point_count("w0"), 10u);
  EXPECT_EQ(server.writers().at("w0").state, "killed");
}

TEST_F(RunTest, SigtermInAForkedChildThatLoggedMarksItsWriterKilled) {
  FakeCohortServer server;
  int status = RunExitProbe(server, "fork-sigterm");
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);  // the child died of SIGTERM, the parent returned 0
  std::string child_label;
  for (const auto& [label, writer] : server.writers()) {
    if (label.rfind("w0-", 0) == 0) child_label = label;
  }
  ASSERT_FALSE(child_label.empty());
  EXPECT_EQ(server.point_count(child_label), 10u);
  EXPECT_EQ(server.writers().at(child_label).state, "killed");
  EXPECT_EQ(server.writers().at(child_label).exit_code, 143);
  EXPECT_EQ(server.writers().at("w0").state, "finished");
  EXPECT_EQ(server.point_count("w0"), 10u);
}

}  // namespace
}  // namespace cohort
