#include "agent/ingest.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "agent/agent_log.h"
#include "agent/fake_http_server_for_test.h"
#include "core/clock.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;

constexpr double kRequestTimeoutS = 8;

// A server that accepts every request and answers none until Release() (or 20 s): the Sender's
// request to it stays in flight, so Sender::Remove of its stream blocks meanwhile.
class HungServer {
 public:
  HungServer()
      : server_([this](const FakeRequest&) {
          std::unique_lock<std::mutex> lock(mu_);
          arrived_ = true;
          arrived_cv_.notify_all();
          released_cv_.wait_for(lock, std::chrono::seconds(20), [this] { return released_; });
          return FakeResponse{503, R"({"error":"released"})", {}};
        }) {}
  ~HungServer() { Release(); }

  std::string url() const { return server_.url(); }
  bool WaitArrived(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return arrived_cv_.wait_for(lock, timeout, [this] { return arrived_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable arrived_cv_, released_cv_;
  bool arrived_ = false;
  bool released_ = false;
  FakeHttpServer server_;  // last: destroyed first, after Release()
};

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kError);
    char tmpl[] = "/tmp/cohort-ingest-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  IngestOptions Options() const {
    IngestOptions o;
    o.data_dir = root_;
    o.system_monitor = false;
    o.sender.http.connect_timeout_s = 1;
    o.sender.http.request_timeout_s = kRequestTimeoutS;
    o.sender.backoff.initial_s = 0.05;
    o.sender.backoff.max_s = 0.2;
    return o;
  }

  static OpenRequest Request(const std::string& url, const std::string& label, bool offline) {
    OpenRequest r;
    r.session = 7;
    r.base_url = url;
    r.api_key = "ck_test";
    r.entity = "alice";
    r.project = "p";
    r.run_id = "run1";
    r.label = label;
    r.offline = offline;
    r.run_json = R"({"id":"run1"})";
    r.writer_json = R"({"label":")" + label + R"("})";
    r.wait_ms = 0;  // do not wait for the server to confirm
    return r;
  }

  // Opens rank_0 for `server` and returns once the Sender's first request hangs there.
  void OpenOnHungServer(Ingest* ingest, HungServer* server) {
    OpenReply reply;
    auto session = ingest->Open(Request(server->url(), "rank_0", false), &reply);
    ASSERT_TRUE(session) << reply.error;
    ASSERT_TRUE(server->WaitArrived(std::chrono::seconds(10)));
    session->Release();  // the client went away; the agent keeps the stream
  }

  std::string root_;
};

// Reopening a writer for another server or mode removes its stream from the old server's
// Sender, which waits for a request in flight (up to a request timeout). Opens of other writers
// must not wait for that.
TEST_F(IngestTest, OpenOfAnotherWriterIsNotHeldUpByAMoveBlockedOnAHungServer) {
  HungServer hung;
  Ingest ingest(Options());
  OpenOnHungServer(&ingest, &hung);

  auto moving = std::async(std::launch::async, [&] {
    OpenReply reply;
    auto s = ingest.Open(Request(hung.url(), "rank_0", /*offline=*/true), &reply);
    EXPECT_TRUE(reply.ok) << reply.error;
    return s;
  });
  // The move is now blocked in Sender::Remove until the hung request ends.
  EXPECT_EQ(moving.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);

  const int64_t start = NowMillis();
  OpenReply reply;
  auto other = ingest.Open(Request(hung.url(), "rank_1", /*offline=*/true), &reply);
  const int64_t took_ms = NowMillis() - start;
  ASSERT_TRUE(other) << reply.error;
  EXPECT_LT(took_ms, 2000) << "an unrelated open waited for the blocked move";
  EXPECT_EQ(moving.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  hung.Release();
  auto moved = moving.get();
  ASSERT_TRUE(moved);
  EXPECT_TRUE(moved->stream()->target().offline);
  EXPECT_EQ(ingest.stream_count(), 2u);
  moved->Release();
  other->Release();
}

// A second open of the writer being moved waits for the move and then shares the new stream:
// it never sees the writer without a stream, nor makes a second one.
TEST_F(IngestTest, OpenOfTheWriterBeingMovedWaitsAndGetsTheNewStream) {
  HungServer hung;
  Ingest ingest(Options());
  OpenOnHungServer(&ingest, &hung);

  auto open_offline = [&] {
    OpenReply reply;
    auto s = ingest.Open(Request(hung.url(), "rank_0", /*offline=*/true), &reply);
    EXPECT_TRUE(reply.ok) << reply.error;
    return s;
  };
  auto first = std::async(std::launch::async, open_offline);
  EXPECT_EQ(first.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  auto second = std::async(std::launch::async, open_offline);
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);

  hung.Release();
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->stream(), b->stream());
  EXPECT_TRUE(a->stream()->target().offline);
  EXPECT_EQ(ingest.stream_count(), 1u);
  a->Release();
  b->Release();
}

}  // namespace
}  // namespace cohort::agent
