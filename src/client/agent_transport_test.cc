// AgentTransport and ConnectOrSpawnAgent against agents that are slow or not there yet: a fake
// agent on a real Unix socket (the agent protocol is our seam) that takes its time, and the
// real stand-in agent binary started while another agent still holds the agent lock.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/agent_paths.h"
#include "agent/protocol.h"
#include "agent/socket_io.h"
#include "client/fake_agent_for_test.h"
#include "client/spawn.h"
#include "client/transport.h"
#include "core/clock.h"

namespace cohort::client {
namespace {

namespace fs = std::filesystem;
using agent::Frame;
using agent::MessageType;

// Serves one connection: answers hello at once, and open/finish only after the wait the client
// allowed plus `extra_ms`, as an agent does whose disk is slow: it counts the wait from when the
// writer's WAL is synced, which is `extra_ms` after the request came.
class SlowAgent {
 public:
  SlowAgent(const std::string& path, int64_t extra_ms)
      : extra_ms_(extra_ms),
        fake_(path, [this](FakeAgent::Connection* conn, const Frame& f) { OnFrame(conn->fd, f); },
              {.max_connections = 1, .read_poll_ms = 200}) {}
  int64_t asked_wait_ms() const { return asked_wait_ms_.load(); }

 private:
  void OnFrame(int fd, const Frame& f) {
    if (f.type == MessageType::kOpen) {
      auto req = agent::ParseOpenRequest(f.payload);
      ASSERT_TRUE(req.ok());
      asked_wait_ms_ = req->wait_ms;
      std::this_thread::sleep_for(std::chrono::milliseconds(extra_ms_ + req->wait_ms));
      agent::OpenReply reply;
      reply.ok = true;
      FakeAgent::Reply(fd, MessageType::kOpenReply, agent::ToJson(reply));
    } else if (f.type == MessageType::kFinish) {
      uint64_t frame = 0;
      std::string_view body;
      ASSERT_TRUE(agent::SplitNumbered(f.payload, &frame, &body).ok());
      auto req = agent::ParseFinishRequest(body);
      ASSERT_TRUE(req.ok());
      asked_wait_ms_ = req->wait_ms;
      std::this_thread::sleep_for(std::chrono::milliseconds(extra_ms_ + req->wait_ms));
      agent::FinishReply reply;
      FakeAgent::Reply(fd, MessageType::kFinishReply, agent::ToJson(reply));
    }
  }

  const int64_t extra_ms_;
  std::atomic<int64_t> asked_wait_ms_{-1};
  FakeAgent fake_;  // last: its thread stops before the members above go
};

class AgentTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-transport-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(AgentTransportTest, OpenAnswerOfASlowAgentArrivesBeforeTheDeadline) {
  SlowAgent agent(root_ + "/agent.sock", 300);
  int64_t deadline = agent::MonoMillis() + 4000;
  auto t = AgentTransport::Connect(root_ + "/agent.sock", deadline);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // The fake answers hello as an agent from before features were listed.
  EXPECT_FALSE((*t)->agent_has(agent::kAgentFeatureAlert));
  agent::OpenRequest req;
  req.wait_ms = 4000;  // "wait as long as you like": the transport keeps a margin for the answer
  auto reply = (*t)->Open(req, deadline);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->ok);
  EXPECT_LE(agent::MonoMillis(), deadline);
  EXPECT_LE(agent.asked_wait_ms(), 3000);
  EXPECT_GE(agent.asked_wait_ms(), 2000);  // most of the time still goes to the server
}

TEST_F(AgentTransportTest, FinishAnswerOfASlowAgentArrivesBeforeTheDeadline) {
  SlowAgent agent(root_ + "/agent.sock", 300);
  auto t = AgentTransport::Connect(root_ + "/agent.sock", agent::MonoMillis() + 2000);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  agent::OpenRequest open;
  open.wait_ms = 0;
  ASSERT_TRUE((*t)->Open(open, agent::MonoMillis() + 2000).ok());
  int64_t deadline = agent::MonoMillis() + 3000;
  agent::FinishRequest req;
  req.wait_ms = 3000;
  auto reply = (*t)->Finish(1, req, deadline);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_LE(agent::MonoMillis(), deadline);
  EXPECT_LE(agent.asked_wait_ms(), 2250);
}

TEST_F(AgentTransportTest, SpawnRetriesWhileAnExitingAgentStillHoldsTheLock) {
  agent::AgentPaths paths = agent::AgentPathsFor(root_ + "/sock/agent.sock");
  ASSERT_TRUE(agent::EnsurePrivateDir(paths.dir).ok());
  // An agent on its way out: the socket is gone, the lock not yet released. The agent spawned
  // now finds the lock taken and exits at once.
  int lock = open(paths.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(flock(lock, LOCK_EX | LOCK_NB), 0);
  std::thread release([lock] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    close(lock);
  });
  setenv("COHORT_BIN", COHORT_TEST_AGENT_BIN, 1);
  setenv("COHORT_AGENT_IDLE_S", "2", 1);
  int64_t start = agent::MonoMillis();
  auto t = ConnectOrSpawnAgent(paths, root_ + "/data", true, start + 8000);
  release.join();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_LT(agent::MonoMillis() - start, 5000);
  int64_t pid = (*t)->agent_pid();
  EXPECT_GT(pid, 0);
  EXPECT_TRUE((*t)->agent_has(agent::kAgentFeatureAlert));  // the real agent takes alerts
  t->reset();
  if (pid > 0) kill(pid_t(pid), SIGTERM);
}

}  // namespace
}  // namespace cohort::client
