// Run::Alert end to end: the client's checks, the wait duration, the alert frame through a
// private or the shared agent to a fake Cohort server (the writer's alerts route), and an alert
// the agent acknowledged surviving the agent's death (WAL replay by the next agent).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <functional>
#include <string>
#include <thread>

#include "agent/fake_cohort_server_for_test.h"
#include "client/run_fixture_for_test.h"
#include "cohort/cohort.h"
#include "core/clock.h"

namespace cohort {
namespace {

using agent::testing::FakeCohortServer;
using agent::testing::FakeHttpServer;

class RunAlertTest : public client::testing::RunFixture {
 protected:
  RunAlertTest() : RunFixture("/tmp/cohort-alert-XXXXXX") {}
};

// An alert reaches the writer's alerts route with its fields, after the values logged before
// it; a repeat of its title within wait_duration is not sent, one without is.
TEST_F(RunAlertTest, AlertsReachTheServerAndTheWaitDurationSuppressesRepeats) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  run->Log({{"loss", 0.5}});
  const int64_t before = NowMillis();
  ASSERT_TRUE(run->Alert("loss diverged", "loss is NaN at step 1", AlertLevel::kError, 60).ok());
  ASSERT_TRUE(run->Alert("loss diverged", "again", AlertLevel::kError, 60).ok());  // suppressed
  ASSERT_TRUE(run->Alert("eval done", "acc 0.91", "INFO").ok());
  ASSERT_TRUE(run->Alert("eval done", "acc 0.92", "WARN").ok());  // no wait: sent
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.alert_posts(), 3);
  auto alerts = server.alerts();
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0].label, "w0");
  EXPECT_EQ(alerts[0].title, "loss diverged");
  EXPECT_EQ(alerts[0].text, "loss is NaN at step 1");
  EXPECT_EQ(alerts[0].level, "ERROR");
  EXPECT_GE(alerts[0].time_ms, before);
  EXPECT_LE(alerts[0].time_ms, NowMillis());
  EXPECT_EQ(alerts[0].count, 1);
  EXPECT_EQ(alerts[1].title, "eval done");
  EXPECT_EQ(alerts[1].count, 2);
  // In order: the batch with the loss went before the first alert.
  std::vector<std::string> verbs;
  for (const auto& r : server.http().requests()) {
    if (r.path.ends_with("/batches") || r.path.ends_with("/alerts")) {
      verbs.push_back(r.path.substr(r.path.rfind('/') + 1));
    }
  }
  ASSERT_GE(verbs.size(), 2u);
  EXPECT_EQ(verbs[0], "batches");
  EXPECT_EQ(verbs[1], "alerts");
  EXPECT_EQ(server.points().at({"w0", "loss", 0}), 0.5);
}

// Bad arguments are refused at the call with the field named, and nothing is sent.
TEST_F(RunAlertTest, BadArgumentsAreRefusedNamingTheField) {
  FakeCohortServer server;
  auto run = Init(Base(server.url(), "inprocess"));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto refused = [&](Status st, const std::string& what) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << what << ": " << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.ToString();
  };
  refused(run->Alert("", "x"), "alert title");
  refused(run->Alert(std::string(257, 't'), "x"), "alert title");
  refused(run->Alert("t", std::string((64 << 10) + 1, 'x')), "alert text");
  refused(run->Alert("t", "\xff\xfe"), "alert text: not valid UTF-8");
  refused(run->Alert("t", "x", "info"), "alert level");
  refused(run->Alert("t", "x", "DEBUG"), "alert level");
  refused(run->Alert("t", "x", static_cast<AlertLevel>(9)), "alert level");
  refused(run->Alert("t", "x", AlertLevel::kWarn, -1), "alert wait_duration");
  refused(run->Alert("t", "x", AlertLevel::kWarn, std::nan("")), "alert wait_duration");
  EXPECT_TRUE(run->Alert(std::string(256, 't'), std::string(64 << 10, 'x'), "WARN").ok());
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(server.alert_posts(), 1);
  EXPECT_EQ(run->Alert("late", "x").code(), StatusCode::kFailedPrecondition);

  Settings off;
  off.mode = "disabled";
  auto disabled = Init(off);
  ASSERT_TRUE(disabled.ok());
  EXPECT_TRUE(disabled->Alert("t", "x").ok());
  EXPECT_EQ(disabled->Alert("", "x").code(), StatusCode::kInvalidArgument);
}

// An alert the agent acknowledged is not lost when the agent dies before the server saw it: the
// next agent replays the writer's WAL and posts it (once).
TEST_F(RunAlertTest, AnAcknowledgedAlertSurvivesTheAgentsDeath) {
  const int port = FakeHttpServer::FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  setenv("COHORT_BACKOFF_MAX_S", "0.3", 1);
  Settings s = Base(url, "agent");
  s.init_timeout_s = 3;
  s.finish_timeout_s = 3;
  auto run = Init(s);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->offline());
  ASSERT_TRUE(run->Alert("node lost", "rank 3 stopped answering", AlertLevel::kError).ok());
  ASSERT_TRUE(run->Finish().ok());  // every frame acknowledged: durable in the agent's WAL
  const int agent = client::testing::SharedAgentPid(root_);
  ASSERT_GT(agent, 0);
  ASSERT_EQ(kill(agent, SIGKILL), 0);

  FakeCohortServer server(port);
  ASSERT_TRUE(cohort::Setup(Base(url, "agent")).ok());  // a new shared agent: it recovers the WAL
  unsetenv("COHORT_BACKOFF_MAX_S");
  EXPECT_TRUE(WaitFor([&] { return server.alerts().size() == 1; }, 20000));
  EXPECT_TRUE(WaitFor([&] { return server.writers()["w0"].state == "finished"; }, 10000));
  auto alerts = server.alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].title, "node lost");
  EXPECT_EQ(alerts[0].level, "ERROR");
  EXPECT_EQ(alerts[0].count, 1);
}

}  // namespace
}  // namespace cohort
