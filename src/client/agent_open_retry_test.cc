// Init against an agent that holds the writer's WAL but whose answer to the open is late or
// lost: the private-agent fallback cannot open that WAL (its lock is the agent's), so Init must
// go back to the agent until init_timeout instead of failing with "wal/LOCK is locked by another
// user" (docs/reliability.md, "Faults"). The agent is a scripted fake on a real Unix socket (the
// agent protocol is our seam) that takes the real WAL lock of the writer's directory, as the
// agent does when it opens a writer.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/ingest.h"
#include "agent/protocol.h"
#include "agent/socket_io.h"
#include "client/fake_agent_for_test.h"
#include "client/private_agents_for_test.h"
#include "cohort/cohort.h"
#include "wal/file.h"
#include "wal/log.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using agent::Frame;
using agent::MessageType;
using agent::MonoMillis;

// How the fake agent treats the open of its n-th connection (0-based).
enum class OpenBehaviour {
  kAnswer,          // takes the WAL lock (if not held), answers at once
  kLockThenHangUp,  // takes the WAL lock, closes the connection without answering
  kLockThenLate,    // takes the WAL lock, answers `late_ms` after the wait the client allowed
  kNeverAnswer,     // takes nothing, never answers (a stuck agent)
  kRefuse,          // takes nothing, closes the connection at once (an agent not up yet)
  kAnswerThenDrop,  // answers, then closes the connection at the first log frame, unacked
};

class ScriptedAgent {
 public:
  ScriptedAgent(std::string socket, std::vector<OpenBehaviour> script, int64_t late_ms = 0)
      : script_(std::move(script)),
        late_ms_(late_ms),
        fake_(socket,
              [this](client::FakeAgent::Connection* conn, const Frame& f) { OnFrame(conn, f); }) {}
  int opens() const { return opens_.load(); }
  int finishes() const { return finishes_.load(); }
  int alerts() const { return alerts_.load(); }
  bool holds_lock() const { return lock_held_.load(); }

 private:
  using FakeAgent = client::FakeAgent;

  void Lock(const agent::OpenRequest& req) {
    if (lock_) return;
    std::string wal = agent::Ingest::WriterDir(req.data_dir, req.run_id, req.label) + "/wal";
    fs::create_directories(wal);
    auto lock = wal::FileSystem::Default()->LockFile(wal + "/" + std::string(wal::kLockFileName));
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    lock_ = std::move(*lock);
    lock_held_ = true;
  }

  void OnFrame(FakeAgent::Connection* conn, const Frame& f) {
    const OpenBehaviour behaviour =
        conn->index < int(script_.size()) ? script_[conn->index] : OpenBehaviour::kAnswer;
    if (f.type == MessageType::kOpen) {
      auto req = agent::ParseOpenRequest(f.payload);
      ASSERT_TRUE(req.ok());
      ++opens_;
      if (behaviour == OpenBehaviour::kNeverAnswer) {
        fake_.SleepUnlessStopped(60000);
        conn->hang_up = true;
        return;
      }
      if (behaviour == OpenBehaviour::kRefuse) {
        conn->hang_up = true;
        return;
      }
      Lock(*req);
      if (behaviour == OpenBehaviour::kLockThenHangUp) {
        conn->hang_up = true;
        return;
      }
      if (behaviour == OpenBehaviour::kLockThenLate) {
        fake_.SleepUnlessStopped(req->wait_ms + late_ms_);
      }
      agent::OpenReply reply;
      reply.ok = true;
      reply.confirmed = true;
      FakeAgent::Reply(conn->fd, MessageType::kOpenReply, agent::ToJson(reply));
    } else if (f.type == MessageType::kLog && behaviour == OpenBehaviour::kAnswerThenDrop) {
      conn->hang_up = true;
    } else if (f.type == MessageType::kLog || f.type == MessageType::kUpdate ||
               f.type == MessageType::kFlush) {
      uint64_t frame = 0;
      std::string_view rest;
      if (agent::SplitNumbered(f.payload, &frame, &rest).ok()) {
        FakeAgent::Reply(conn->fd, MessageType::kAck, agent::NumberedPayload(frame, ""));
      }
    } else if (f.type == MessageType::kAlert) {
      ++alerts_;  // an agent from before alerts would answer an error and close
    } else if (f.type == MessageType::kFinish) {
      ++finishes_;
      FakeAgent::Reply(conn->fd, MessageType::kFinishReply, agent::ToJson(agent::FinishReply{}));
    }
  }

  const std::vector<OpenBehaviour> script_;
  const int64_t late_ms_;
  std::atomic<int> opens_{0};
  std::atomic<int> finishes_{0};
  std::atomic<int> alerts_{0};
  std::atomic<bool> lock_held_{false};
  std::unique_ptr<wal::FileLock> lock_;  // the fake's thread's
  FakeAgent fake_;                       // last: its thread stops before the members above go
};

class AgentOpenRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-openretry-XXXXXX";
    root_ = mkdtemp(tmpl);
    setenv("HOME", root_.c_str(), 1);
    for (const char* v : {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_RUN_ID", "COHORT_MODE",
                          "COHORT_AGENT", "RANK", "TORCHELASTIC_RUN_ID"}) {
      unsetenv(v);
    }
    setenv("COHORT_AGENT_SOCKET", (root_ + "/agent.sock").c_str(), 1);
    // A private agent when the fake fails the client; the fake is the only shared agent (its
    // socket answers, so none is spawned).
    setenv("COHORT_BIN", COHORT_TEST_AGENT_BIN, 1);
  }
  void TearDown() override {
    client::testing::StopAndWait(client::testing::PrivateAgentPids(root_ + "/data"));
    fs::remove_all(root_);
  }

  Settings Base(double init_timeout_s) {
    Settings s;
    s.base_url = "http://127.0.0.1:1";  // nobody: only the fake agent is ever reached
    s.api_key = "ck_test";
    s.project = "p";
    s.run_id = "retry-run";
    s.label = "w0";
    s.dir = root_ + "/data";
    s.transport = "agent";
    s.capture_console = false;
    s.stats_sampling_interval_s = 0;
    s.handle_sigterm = false;
    s.init_timeout_s = init_timeout_s;
    s.finish_timeout_s = 2;
    return s;
  }

  std::string root_;
};

TEST_F(AgentOpenRetryTest, AgentThatTookTheWalAndHungUpIsOpenedAgainInsteadOfFailingInit) {
  ScriptedAgent fake(root_ + "/agent.sock",
                     {OpenBehaviour::kLockThenHangUp, OpenBehaviour::kAnswer});
  int64_t start = MonoMillis();
  auto run = Init(Base(4));
  ASSERT_TRUE(run.ok()) << run.status().ToString();  // was: "... is locked by another user"
  EXPECT_LT(MonoMillis() - start, 4000);
  EXPECT_TRUE(fake.holds_lock());
  EXPECT_EQ(fake.opens(), 2);
  run->Log({{"x", 1.0}});
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(fake.finishes(), 1);  // the run went through the agent, not a private one
}

TEST_F(AgentOpenRetryTest, LateAnswerOfAnAgentHoldingTheWalStillStartsTheRunThroughIt) {
  // Init 6 s: the agent may wait ~4.5 s and is asked to answer 1.5 s before the deadline; the
  // client tries a private agent 0.75 s before it (the WAL is locked) and goes on reading: the answer
  // comes ~0.4 s before the deadline.
  ScriptedAgent fake(root_ + "/agent.sock", {OpenBehaviour::kLockThenLate}, /*late_ms=*/1100);
  int64_t start = MonoMillis();
  auto run = Init(Base(6));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_LT(MonoMillis() - start, 6000);
  EXPECT_EQ(fake.opens(), 1);
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(fake.finishes(), 1);
}

TEST_F(AgentOpenRetryTest, StuckAgentThatNeverTookTheWalFallsBackToAPrivateAgentInTime) {
  ScriptedAgent fake(root_ + "/agent.sock", {OpenBehaviour::kNeverAnswer});
  int64_t start = MonoMillis();
  auto run = Init(Base(2));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_LT(MonoMillis() - start, 2000);
  EXPECT_FALSE(fake.holds_lock());
  EXPECT_EQ(fake.finishes(), 0);
  run->Log({{"x", 1.0}});
  (void)run->Finish();  // a private agent, against a server that is not there: bounded
  EXPECT_EQ(fake.finishes(), 0);
}

// Finish does not wait out the flusher's reconnect backoff: after three refused reopens the
// next try was 2 s away, past a 1 s finish, which then slept without a try and dropped the
// frames of an agent that was back.
TEST_F(AgentOpenRetryTest, FinishTriesTheAgentAtOnceWhateverTheReconnectBackoff) {
  setenv("COHORT_BIN", (root_ + "/no-such-binary").c_str(), 1);  // no private agent either
  ScriptedAgent fake(root_ + "/agent.sock",
                     {OpenBehaviour::kAnswerThenDrop, OpenBehaviour::kRefuse,
                      OpenBehaviour::kRefuse, OpenBehaviour::kRefuse, OpenBehaviour::kAnswer});
  Settings settings = Base(4);
  settings.finish_timeout_s = 1;
  auto run = Init(settings);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  run->Log({{"x", 1.0}});
  const int64_t give_up = MonoMillis() + 10000;
  while (fake.opens() < 4 && MonoMillis() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(fake.opens(), 4);  // the third refusal: the flusher's next try is 2 s away
  Status finished = run->Finish();
  EXPECT_TRUE(finished.ok()) << finished.ToString();
  EXPECT_EQ(fake.finishes(), 1);
}

// A finish that no agent confirms says what it discards, and dropped() counts the values that
// never reached an agent (it said only that the agent did not confirm in time).
TEST_F(AgentOpenRetryTest, FinishThatGivesUpSaysHowManyValuesNeverReachedAnAgent) {
  setenv("COHORT_BIN", (root_ + "/no-such-binary").c_str(), 1);  // no private agent either
  ScriptedAgent fake(root_ + "/agent.sock",
                     {OpenBehaviour::kAnswerThenDrop, OpenBehaviour::kRefuse,
                      OpenBehaviour::kRefuse, OpenBehaviour::kRefuse, OpenBehaviour::kRefuse,
                      OpenBehaviour::kRefuse, OpenBehaviour::kRefuse, OpenBehaviour::kRefuse,
                      OpenBehaviour::kRefuse, OpenBehaviour::kRefuse, OpenBehaviour::kRefuse,
                      OpenBehaviour::kRefuse, OpenBehaviour::kRefuse, OpenBehaviour::kRefuse});
  Settings settings = Base(4);
  settings.finish_timeout_s = 1;
  auto run = Init(settings);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  run->Log({{"x", 1.0}, {"y", 2.0}});
  const int64_t give_up = MonoMillis() + 10000;
  while (fake.opens() < 2 && MonoMillis() < give_up) {  // the first frame went to a dead agent
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run->Log({{"x", 3.0}});
  EXPECT_EQ(run->dropped(), 0);
  Status finished = run->Finish();
  ASSERT_EQ(finished.code(), StatusCode::kDeadlineExceeded) << finished.ToString();
  // The first frame (2 values) was sent to the agent that hung up, the second never sent.
  EXPECT_NE(finished.message().find("of the values logged, 1 never reached an agent (discarded, "
                                    "counted in dropped()) and 2 were sent but not confirmed"),
            std::string::npos)
      << finished.ToString();
  EXPECT_EQ(run->dropped(), 1);
}

// The fake's hello lists no features, as an agent installed before alerts: Run::Alert sends it no
// alert frame (which it would refuse, and the client resend forever, holding up the writer's
// data), says why, and the run goes on.
TEST_F(AgentOpenRetryTest, AnAgentFromBeforeAlertsIsSentNoAlertAndTheRunGoesOn) {
  ScriptedAgent fake(root_ + "/agent.sock", {OpenBehaviour::kAnswer});
  auto run = Init(Base(4));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  Status s = run->Alert("loss diverged", "NaN at step 3", AlertLevel::kError);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("older than this client"), std::string::npos) << s.ToString();
  run->Log({{"x", 1.0}});
  ASSERT_TRUE(run->Finish().ok());
  EXPECT_EQ(fake.finishes(), 1);
  EXPECT_EQ(fake.alerts(), 0);
}

}  // namespace
}  // namespace cohort
