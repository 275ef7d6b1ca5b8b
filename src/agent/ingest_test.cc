#include "agent/ingest.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "agent/agent_log.h"
#include "agent/alert_body.h"
#include "agent/fake_cohort_server_for_test.h"
#include "agent/fake_http_server_for_test.h"
#include "core/batch_format.h"
#include "core/clock.h"
#include "wal/fault_file_system.h"
#include "wal/format.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeCohortServer;
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

// One history row at `step` with key "loss".
std::string Batch(int64_t step) {
  batch::Batch b;
  b.keys = {"loss"};
  b.cells = {{0, double(step)}};
  b.history = {{.step = step, .time_ms = 1, .begin = 0, .count = 1}};
  std::string out;
  batch::Encode(b, &out);
  return out;
}

bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 1000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// A client whose connection ended without finish while its process runs on (it gave up on a
// stalled agent) comes back and re-opens its session: the agent has recorded the writer as
// crashed and uploaded everything, but kept its directory, so the open reply still says what
// the session stored and nothing is stored twice; the writer ends finished, then goes.
TEST_F(IngestTest, AWriterWhoseClientWentAwayIsKeptForItsReturnAndNothingIsStoredTwice) {
  FakeCohortServer server;
  Ingest ingest(Options());
  const OpenRequest request = Request(server.url(), "rank_0", false);
  OpenReply reply;
  auto session = ingest.Open(request, &reply);
  ASSERT_TRUE(session) << reply.error;
  session->set_client(ClientProcess::Find(getpid()));
  for (int64_t f = 1; f <= 3; ++f) ASSERT_TRUE(session->Log(uint64_t(f), Batch(f - 1)).ok());
  ASSERT_TRUE(session->Sync().ok());
  const std::string dir = session->dir();
  session.reset();  // gone without finish, its acks unread

  ASSERT_TRUE(Eventually([&] { return server.writers()["rank_0"].state == "crashed"; }));
  ASSERT_TRUE(Eventually([&] { return ingest.Idle(); }));
  ingest.Tick();
  EXPECT_EQ(ingest.stream_count(), 1u);
  EXPECT_TRUE(fs::exists(dir));

  session = ingest.Open(request, &reply);
  ASSERT_TRUE(session) << reply.error;
  EXPECT_EQ(reply.last_frame, 3u);
  ASSERT_TRUE(session->Log(3, Batch(2)).ok());  // resent all the same: not stored again
  ASSERT_TRUE(session->Log(4, Batch(3)).ok());
  FinishRequest finish;
  finish.exit_code = 0;
  finish.wait_ms = 10000;
  auto finished = session->Finish(5, finish);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_TRUE(finished->uploaded);
  session.reset();
  ingest.Tick();
  EXPECT_EQ(ingest.stream_count(), 0u);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(server.writers()["rank_0"].state, "finished");
  EXPECT_EQ(server.point_count("rank_0"), 4u);
  EXPECT_EQ(server.overwritten_points(), 0);
}

TEST_F(IngestTest, AWriterWhoseClientProcessEndedIsRemovedOnceUploaded) {
  FakeCohortServer server;
  Ingest ingest(Options());
  OpenReply reply;
  auto session = ingest.Open(Request(server.url(), "rank_0", false), &reply);
  ASSERT_TRUE(session) << reply.error;
  ClientProcess ended = *ClientProcess::Find(getpid());
  ended.start_ticks += 1;  // an earlier process that had this pid
  session->set_client(ended);
  ASSERT_TRUE(session->Log(1, Batch(0)).ok());
  ASSERT_TRUE(session->Sync().ok());
  const std::string dir = session->dir();
  session.reset();
  ASSERT_TRUE(Eventually([&] { return server.writers()["rank_0"].state == "crashed"; }));
  ASSERT_TRUE(Eventually([&] { return ingest.Idle(); }));
  ingest.Tick();
  EXPECT_EQ(ingest.stream_count(), 0u);
  EXPECT_FALSE(fs::exists(dir));
}

// The agent and its client are killed together (a node's job killed, the agent with it): the
// next agent resumes the writer's upload and, finding in clients.json that the client's process
// has ended, records the writer crashed; once uploaded its directory goes. (The writer stayed
// "running" on the server and its directory was kept for ever, closed and reopened at each
// agent start.)
TEST_F(IngestTest, AWriterWhoseClientEndedWhileNoAgentRanIsRecordedCrashedAndRemoved) {
  FakeCohortServer server;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string dir;
  {
    Ingest first(Options());
    OpenReply reply;
    auto session = first.Open(Request(server.url(), "rank_0", false), &reply);
    ASSERT_TRUE(session) << reply.error;
    std::optional<ClientProcess> client = ClientProcess::Find(child);
    ASSERT_TRUE(client.has_value());
    session->set_client(client);
    for (int64_t f = 1; f <= 3; ++f) ASSERT_TRUE(session->Log(uint64_t(f), Batch(f - 1)).ok());
    ASSERT_TRUE(session->Sync().ok());
    dir = session->dir();
    session->Release();  // the agent is gone: it records nothing more
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(fs::exists(dir + "/clients.json"));

  Ingest next(Options());
  ASSERT_EQ(next.RecoverDir(root_), 1);
  next.Tick();
  ASSERT_TRUE(Eventually([&] { return server.writers()["rank_0"].state == "crashed"; }))
      << server.writers()["rank_0"].state;
  EXPECT_EQ(server.point_count("rank_0"), 3u);
  ASSERT_TRUE(Eventually([&] {
    next.Tick();
    return !fs::exists(dir);
  }));
  EXPECT_EQ(next.stream_count(), 0u);
}

// While the client's process runs the next agent keeps its writer running for its return.
TEST_F(IngestTest, AWriterWhoseClientRunsOnIsKeptRunningByTheNextAgent) {
  FakeCohortServer server;
  std::string dir;
  {
    Ingest first(Options());
    OpenReply reply;
    auto session = first.Open(Request(server.url(), "rank_0", false), &reply);
    ASSERT_TRUE(session) << reply.error;
    session->set_client(ClientProcess::Find(getpid()));
    ASSERT_TRUE(session->Log(1, Batch(0)).ok());
    ASSERT_TRUE(session->Sync().ok());
    dir = session->dir();
    session->Release();
  }
  Ingest next(Options());
  ASSERT_EQ(next.RecoverDir(root_), 1);
  ASSERT_TRUE(Eventually([&] { return server.point_count("rank_0") == 1u; }));
  for (int i = 0; i < 5; ++i) next.Tick();
  EXPECT_EQ(server.writers()["rank_0"].state, "running");
  EXPECT_TRUE(fs::exists(dir));
}

// A writer reopened (its earlier records not uploaded yet: the server was down) with a key the
// server refuses: the open fails, as it says, and the earlier records stay; once the server takes
// the key again they are uploaded. (The open marked the writer refused: its records were dropped
// and its directory removed.)
TEST_F(IngestTest, AKeyRefusedAtReopenKeepsTheWritersEarlierRecords) {
  std::atomic<int> mode{503};  // 503: down; 401: the key refused; 200: fine
  std::atomic<int> batches{0}, joins{0};
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    const int m = mode.load();
    if (m != 200) return {m, R"({"error":{"code":"x","message":"no"}})", {}};
    if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice"})", {}};
    if (r.path.ends_with("/writers")) {
      ++joins;
      return {201, R"({"label":"rank_0","next_step":0})", {}};
    }
    if (r.path.ends_with("/batches")) ++batches;
    return {200, R"({"duplicate":false,"points":1})", {}};
  });
  IngestOptions o = Options();
  o.sender.auth_pause_s = 0.2;
  Ingest ingest(o);
  OpenReply reply;
  auto session = ingest.Open(Request(server.url(), "rank_0", false), &reply);
  ASSERT_TRUE(session) << reply.error;
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(session->Log(i, Batch(i - 1)).ok());
  ASSERT_TRUE(session->Sync().ok());
  const std::string dir = session->dir();
  session->Release();  // the client went away (its process runs on)
  session.reset();

  mode = 401;
  // The Sender's backoff from the 503s over (an open does not wait on a server known to fail).
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  OpenRequest again = Request(server.url(), "rank_0", false);
  again.session = 8;
  again.wait_ms = 3000;
  auto refused = ingest.Open(again, &reply);
  EXPECT_FALSE(refused);
  EXPECT_NE(reply.error.find("kept"), std::string::npos) << reply.error;
  // Opened again and again with the refused key (a script retrying): refused at once, with
  // nothing appended each time (a run upsert and a join each, never finished).
  for (uint64_t session = 9; session <= 11; ++session) {
    again.session = session;
    EXPECT_FALSE(ingest.Open(again, &reply));
    EXPECT_NE(reply.error.find("kept"), std::string::npos) << reply.error;
  }
  for (int i = 0; i < 5; ++i) ingest.Tick();
  EXPECT_TRUE(fs::exists(dir + "/meta.json"));

  mode = 200;
  ASSERT_TRUE(Eventually([&] { return batches.load() >= 3; })) << batches.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LE(joins.load(), 2) << "the first open's join, and at most the first refused one's";
}

// A writer whose key was revoked while its records waited (the server down) is reopened with a
// new key: its stream goes on with the new key, the backlog included, and meta.json says so for
// a later agent. (The stream kept the old key: the open was refused, the backlog stuck.)
TEST_F(IngestTest, AWriterReopenedWithANewKeyUploadsItsBacklogWithIt) {
  std::atomic<int> mode{503};  // 503: down; then up, refusing the old key
  std::atomic<int> new_key_batches{0}, refusals{0};
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (mode.load() == 503) return {503, R"({"error":{"code":"x","message":"down"}})", {}};
    if (r.authorization != "Bearer ck_new") {
      ++refusals;
      return {401, R"({"error":{"code":"unauthenticated","message":"key revoked"}})", {}};
    }
    if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice"})", {}};
    if (r.path.ends_with("/writers")) return {201, R"({"label":"rank_0","next_step":0})", {}};
    if (r.path.ends_with("/batches")) ++new_key_batches;
    return {200, R"({"duplicate":false,"points":1})", {}};
  });
  IngestOptions o = Options();
  o.sender.auth_pause_s = 0.2;
  Ingest ingest(o);
  OpenRequest first = Request(server.url(), "rank_0", false);
  first.api_key = "ck_old";
  OpenReply reply;
  auto session = ingest.Open(first, &reply);
  ASSERT_TRUE(session) << reply.error;
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(session->Log(i, Batch(i - 1)).ok());
  ASSERT_TRUE(session->Sync().ok());
  const std::string dir = session->dir();
  session->Release();
  session.reset();

  mode = 200;
  // The old key refused once the server is back (the Sender pauses the writer on it).
  ASSERT_TRUE(Eventually([&] { return refusals.load() > 0; }));
  OpenRequest again = Request(server.url(), "rank_0", false);
  again.api_key = "ck_new";
  again.session = 8;
  again.wait_ms = 3000;
  session = ingest.Open(again, &reply);
  ASSERT_TRUE(session) << reply.error;
  EXPECT_EQ(session->stream()->target().api_key, "ck_new");
  ASSERT_TRUE(Eventually([&] { return new_key_batches.load() >= 3; })) << new_key_batches.load();
  std::ifstream meta(dir + "/meta.json");
  std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("ck_new"), std::string::npos) << text;
  EXPECT_EQ(text.find("ck_old"), std::string::npos) << text;
  session->Release();
}

// A failed fdatasync breaks the writer's WAL (the kernel may have dropped what it did not
// write): the client's next open gets the stream anew, recovered from what is durable, and the
// frames it resends are stored once. (The broken stream stayed in use: every open failed until
// the agent restarted.)
TEST_F(IngestTest, AWriterWhoseWalSyncFailedIsOpenedAnewAndTakesTheResentFrames) {
  FakeCohortServer server;
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  IngestOptions o = Options();
  o.fs = &faults;
  Ingest ingest(o);
  const OpenRequest request = Request(server.url(), "rank_0", false);
  OpenReply reply;
  auto session = ingest.Open(request, &reply);
  ASSERT_TRUE(session) << reply.error;
  for (int64_t f = 1; f <= 2; ++f) ASSERT_TRUE(session->Log(uint64_t(f), Batch(f - 1)).ok());
  ASSERT_TRUE(session->Sync().ok());
  faults.FailSync(1, EIO, wal::SegmentFileName(1));
  ASSERT_TRUE(session->Log(3, Batch(2)).ok());
  EXPECT_FALSE(session->Sync().ok());
  EXPECT_TRUE(session->stream()->broken());
  session->Release();  // the connection answered the error and closed; the client reconnects
  session.reset();

  session = ingest.Open(request, &reply);
  ASSERT_TRUE(session) << reply.error;
  EXPECT_FALSE(session->stream()->broken());
  // Frame 3 was written but its sync failed: the WAL is cut back to what was durable (a reopen
  // would read it from the page cache and a later sync pass it off as kept).
  EXPECT_EQ(reply.last_frame, 2u);
  for (uint64_t f = reply.last_frame + 1; f <= 4; ++f) {
    ASSERT_TRUE(session->Log(f, Batch(int64_t(f) - 1)).ok());
  }
  ASSERT_TRUE(session->Sync().ok());
  FinishRequest finish;
  finish.exit_code = 0;
  finish.wait_ms = 10000;
  auto finished = session->Finish(5, finish);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_TRUE(finished->uploaded);
  EXPECT_EQ(server.point_count("rank_0"), 4u);
  EXPECT_EQ(server.overwritten_points(), 0);
  EXPECT_EQ(server.writers()["rank_0"].state, "finished");
}

// A key that works is not replaced by an open with another (a second process, a mistyped key):
// the writer's records go on with the working one. (Two processes took turns moving the stream,
// each closing it under the other.)
TEST_F(IngestTest, AnOpenWithAnotherKeyDoesNotReplaceAWorkingOne) {
  FakeCohortServer server;
  Ingest ingest(Options());
  OpenReply reply;
  auto first = ingest.Open(Request(server.url(), "rank_0", false), &reply);
  ASSERT_TRUE(first) << reply.error;
  ASSERT_TRUE(first->Log(1, Batch(0)).ok());
  ASSERT_TRUE(first->Sync().ok());
  ASSERT_TRUE(Eventually([&] { return server.point_count("rank_0") == 1u; }));
  OpenRequest other = Request(server.url(), "rank_0", false);
  other.api_key = "ck_typo";
  other.session = 8;
  auto second = ingest.Open(other, &reply);
  ASSERT_TRUE(second) << reply.error;
  EXPECT_EQ(second->stream(), first->stream());
  EXPECT_EQ(first->stream()->target().api_key, "ck_test");
  ASSERT_TRUE(first->Log(2, Batch(1)).ok());  // the first process's stream was not closed
  ASSERT_TRUE(first->Sync().ok());
  first->Release();
  second->Release();
}

// An open of a writer whose finished directory Tick is removing waits until it is gone, then
// makes the writer anew. (It made its new stream in the directory being removed: the removal
// took the new stream's files, and what it then acknowledged was lost.)
TEST_F(IngestTest, AnOpenDuringTheRemovalOfItsWritersDirectoryWaitsForIt) {
  FakeCohortServer server;
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  IngestOptions o = Options();
  o.fs = &faults;
  Ingest ingest(o);
  OpenReply reply;
  auto session = ingest.Open(Request(server.url(), "rank_0", false), &reply);
  ASSERT_TRUE(session) << reply.error;
  const std::string dir = session->dir();
  FinishRequest finish;
  finish.exit_code = 0;
  finish.wait_ms = 5000;
  auto done = session->Finish(1, finish);
  ASSERT_TRUE(done.ok() && done->uploaded);
  session.reset();

  std::mutex m;
  std::condition_variable cv;
  bool arrived = false, release = false;
  faults.SetBeforeRemoveAll([&](const std::string& path) {
    if (path != dir) return;
    std::unique_lock lock(m);
    arrived = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  std::thread tick([&] { ingest.Tick(); });
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived; }));
  }
  std::atomic<bool> opened{false};
  std::unique_ptr<WriterSession> second;
  OpenReply second_reply;
  std::thread open([&] {
    OpenRequest r = Request(server.url(), "rank_0", false);
    r.session = 9;
    second = ingest.Open(r, &second_reply);
    opened = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(opened.load());  // waits for the removal
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  tick.join();
  open.join();
  faults.SetBeforeRemoveAll(nullptr);
  ASSERT_TRUE(second) << second_reply.error;
  EXPECT_TRUE(fs::exists(dir + "/meta.json"));
  ASSERT_TRUE(second->Log(1, Batch(5)).ok());
  ASSERT_TRUE(second->Sync().ok());
  EXPECT_TRUE(fs::exists(dir + "/meta.json"));
  second.reset();
}

// A writer that is uploaded and finished has its directory removed, FINISHED marker first. When
// that marker cannot be written the agent says so, deletes nothing (every record is on the
// server: nothing is lost) and tries again later, and the directory goes once the disk works.
TEST_F(IngestTest, AFailedFinishedMarkerIsLoggedKeepsTheDirectoryAndIsRetried) {
  FakeHttpServer server([](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/writers")) return {201, R"({"label":"rank_0","next_step":0})", {}};
    return {200, R"({"duplicate":false,"points":1})", {}};
  });
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  IngestOptions o = Options();
  o.fs = &faults;
  o.remove_retry_s = 0.2;
  Ingest ingest(o);
  OpenReply reply;
  auto session = ingest.Open(Request(server.url(), "rank_0", /*offline=*/false), &reply);
  ASSERT_TRUE(session) << reply.error;
  const std::string dir = session->dir();
  FinishRequest finish;
  finish.exit_code = 0;
  finish.wait_ms = 5000;
  auto done = session->Finish(1, finish);
  ASSERT_TRUE(done.ok() && done->uploaded) << (done.ok() ? "not uploaded" : done.status().ToString());
  session.reset();
  faults.FailWrite(1, EIO, 0, /*sticky=*/true, "FINISHED");
  SetLogLevel(LogLevel::kWarning);
  ::testing::internal::CaptureStderr();
  ingest.Tick();
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kError);
  EXPECT_NE(log.find("its directory cannot be removed"), std::string::npos) << log;
  EXPECT_NE(log.find("cannot write the FINISHED marker"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(dir + "/meta.json"));
  EXPECT_EQ(ingest.stream_count(), 1u);
  faults.ClearFaults();
  const int64_t until = NowMillis() + 5000;
  while (fs::exists(dir) && NowMillis() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ingest.Tick();
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(ingest.stream_count(), 0u);
}

// The agent checks a log frame's batch (header and checksum, no decoding) and stores it byte for
// byte: the WAL record's body is the client's batch, which the Sender posts as it is.
TEST_F(IngestTest, LogStoresTheBatchVerbatimAndRefusesADamagedOne) {
  Ingest ingest(Options());
  OpenReply reply;
  auto session = ingest.Open(Request("http://127.0.0.1:1", "rank_0", /*offline=*/true), &reply);
  ASSERT_TRUE(session) << reply.error;
  batch::Batch b;
  b.keys = {"loss"};
  b.cells = {{0, 0.5}};
  b.history = {{.step = 3, .time_ms = 1, .begin = 0, .count = 1}};
  std::string good;
  batch::Encode(b, &good);
  std::string damaged = good;
  damaged.back() ^= 1;
  Status refused = session->Log(2, damaged);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("log frame 2: binary batch: bad checksum"), std::string::npos)
      << refused.ToString();
  std::string old = good;
  old[4] = 1;
  EXPECT_NE(session->Log(2, old).message().find("version 1 is not supported"), std::string::npos);
  ASSERT_TRUE(session->Log(3, good).ok());
  ASSERT_TRUE(session->Sync().ok());
  WriterStream* stream = session->stream();
  const Record* rec = nullptr;
  std::vector<Record> records;
  while (*stream->Peek(&rec)) {
    records.push_back(*rec);
    stream->Pop();
  }
  ASSERT_EQ(records.size(), 3u);  // run upsert, writer join, the one good batch
  EXPECT_EQ(records[2].kind, RecordKind::kBatch);
  EXPECT_EQ(records[2].frame, 3u);
  EXPECT_EQ(records[2].body, good);
  session->Release();
}

// An alert frame is checked (alert_body.h) and stored as it is, as a kAlert record; a bad one is
// refused with the field named and nothing stored.
TEST_F(IngestTest, AlertStoresTheBodyAsAnAlertRecordAndRefusesABadOne) {
  Ingest ingest(Options());
  OpenReply reply;
  auto session = ingest.Open(Request("http://127.0.0.1:1", "rank_0", /*offline=*/true), &reply);
  ASSERT_TRUE(session) << reply.error;
  const std::string good = AlertBody("nan loss", "step 3", "WARN", 42);
  Status refused = session->Alert(2, AlertBody("t", "x", "LOUD", 42));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("alert level"), std::string::npos) << refused.ToString();
  EXPECT_NE(session->Alert(2, R"({"title":"t","text":"x","level":"INFO"})")
                .message()
                .find("alert time_ms"),
            std::string::npos);
  EXPECT_NE(session->Alert(2, R"({"title":"t","text":"x","level":"INFO","time_ms":1,"x":1})")
                .message()
                .find("unknown field \"x\""),
            std::string::npos);
  EXPECT_FALSE(session->Alert(2, "[]").ok());
  ASSERT_TRUE(session->Alert(3, good).ok());
  ASSERT_TRUE(session->Sync().ok());
  WriterStream* stream = session->stream();
  const Record* rec = nullptr;
  std::vector<Record> records;
  while (*stream->Peek(&rec)) {
    records.push_back(*rec);
    stream->Pop();
  }
  ASSERT_EQ(records.size(), 3u);  // run upsert, writer join, the one good alert
  EXPECT_EQ(records[2].kind, RecordKind::kAlert);
  EXPECT_EQ(records[2].frame, 3u);
  EXPECT_EQ(records[2].body, good);
  EXPECT_EQ(RecordKindName(records[2].kind), "alert");
  session->Release();
}

}  // namespace
}  // namespace cohort::agent
