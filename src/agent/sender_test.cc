#include "agent/sender.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <thread>

#include "agent/agent_log.h"
#include "agent/alert_body.h"
#include "agent/fake_cohort_server_for_test.h"
#include "agent/fake_http_server_for_test.h"
#include "core/batch_format.h"
#include "core/clock.h"
#include "core/limits.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;

std::string BatchBody(double loss) {
  batch::Batch b;
  b.keys = {"loss"};
  b.cells = {{0, loss}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 1}};
  std::string out;
  batch::Encode(b, &out);
  return out;
}

FakeResponse Ok(const FakeRequest& r) {
  if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice"})", {}};
  if (r.path.ends_with("/writers")) return {201, R"({"label":"rank_0","next_step":5})", {}};
  if (r.path == "/api/v1/runs/alice/p") return {201, R"({"id":"run1","name":"brave-run"})", {}};
  return {200, "{}", {}};
}

class SenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kError);  // retries and pauses are expected here
    char tmpl[] = "/tmp/cohort-sender-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A stream of entity "alice" holding an alert, then a batch, then the writer's finish.
  std::shared_ptr<WriterStream> MakeAlertStream(const std::string& url) {
    WriterTarget t{.base_url = url,
                   .api_key = "ck_test",
                   .entity = "alice",
                   .project = "p",
                   .run_id = "run1",
                   .label = "rank_0"};
    auto s = WriterStream::Create(root_ + "/run1/rank_0", t);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->Append(RecordKind::kRunUpsert, 1, 1, R"({"id":"run1"})").ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kWriterJoin, 1, 2, R"({"label":"rank_0"})").ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kAlert, 1, 3, AlertBody("a", "", "INFO", 1)).ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kBatch, 1, 4, BatchBody(1)).ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 5, R"({"exit_code":0})").ok());
    EXPECT_TRUE((*s)->Sync().ok());
    return *s;
  }
  std::shared_ptr<WriterStream> MakeStream(const std::string& url, const std::string& entity,
                                           int batches) {
    WriterTarget t;
    t.base_url = url;
    t.api_key = "ck_test";
    t.entity = entity;
    t.project = "p";
    t.run_id = "run1";
    t.label = "rank_0";
    auto s = WriterStream::Create(root_ + "/run1/rank_0", t);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->Append(RecordKind::kRunUpsert, 1, 1, R"({"id":"run1"})").ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kWriterJoin, 1, 2, R"({"label":"rank_0"})").ok());
    for (int i = 0; i < batches; ++i) {
      EXPECT_TRUE((*s)->Append(RecordKind::kBatch, 1, 3 + i, BatchBody(i)).ok());
    }
    EXPECT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 99, R"({"exit_code":0})").ok());
    EXPECT_TRUE((*s)->Sync().ok());
    return *s;
  }

  static SenderOptions FastOptions() {
    SenderOptions o;
    o.backoff.initial_s = 0.05;
    o.backoff.max_s = 0.2;
    o.http.connect_timeout_s = 1;
    o.http.request_timeout_s = 5;
    return o;
  }

  static bool WaitComplete(WriterStream* s, int64_t ms) {
    return s->WaitFor([](const UploadProgress& p) { return p.complete; }, NowMillis() + ms)
        .complete;
  }

  std::string root_;
};

std::vector<std::string> Paths(const std::vector<FakeRequest>& reqs) {
  std::vector<std::string> out;
  for (const auto& r : reqs) out.push_back(r.method + " " + r.path);
  return out;
}

// Batches go out as the WAL holds them: the client's batch v4 bytes, unchanged, with the seq in
// the Cohort-Batch-Seq header and the stream's id in Cohort-Batch-Ordered (each batch sent once
// the records before it are settled; the id saved in seq.json first); nothing is asked of the
// server first.
TEST_F(SenderTest, UploadsRecordsInOrderWithTheirSeqAndTheWalBytesAsTheBody) {
  FakeHttpServer server(Ok);
  auto stream = MakeStream(server.url(), "alice", 2);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  auto reqs = server.requests();
  EXPECT_EQ(Paths(reqs), (std::vector<std::string>{
                             "POST /api/v1/runs/alice/p",
                             "POST /api/v1/runs/alice/p/run1/writers",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/batches",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/batches",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/finish",
                         }));
  EXPECT_EQ(reqs[0].authorization, "Bearer ck_test");
  for (int i = 0; i < 2; ++i) {
    const FakeRequest& b = reqs[2 + i];
    EXPECT_EQ(b.content_type, limits::kBatchMediaType);
    EXPECT_EQ(b.body, BatchBody(i));  // byte for byte what was appended
    EXPECT_EQ(b.batch_ordered, stream->stream_id());  // one at a time, in seq order
  }
  EXPECT_EQ(std::stoull(reqs[3].batch_seq), std::stoull(reqs[2].batch_seq) + 1);
  UploadProgress p = stream->progress();
  EXPECT_TRUE(p.joined);
  EXPECT_EQ(p.next_step, 5);
  EXPECT_EQ(p.run_name, "brave-run");
  EXPECT_EQ(server.connections(), 1u);  // keep-alive
}

TEST_F(SenderTest, CountsThePointsTheServerStored) {
  FakeHttpServer server([](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches")) return {200, R"({"duplicate":false,"points":3})", {}};
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 4);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  EXPECT_EQ(sender.stats().points, 12);
}

// A server that does not read batch v4 (415) is an error the agent says clearly; it keeps the
// records and sends them again later, never as another encoding and never skipped.
TEST_F(SenderTest, UnsupportedBatchFormatKeepsTheRecordsAndRetriesLater) {
  std::atomic<bool> upgraded{false};
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches") && !upgraded) {
      return {415,
              R"({"error":{"code":"unsupported_media_type","message":"binary batch version 4 is not supported"}})",
              {}};
    }
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 2);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  UploadProgress p =
      stream->WaitFor([](const UploadProgress& p) { return p.failures >= 1; }, NowMillis() + 5000);
  EXPECT_EQ(p.last_failure.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(p.last_failure.message().find("does not read cohort-batch-v4"), std::string::npos)
      << p.last_failure.ToString();
  EXPECT_NE(p.last_failure.message().find("records stay in the WAL"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(stream->progress().done_records, 2);  // the upsert and the join; no batch skipped
  upgraded = true;
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  int batches = 0;
  for (const auto& r : server.requests()) {
    if (r.path.ends_with("/batches")) {
      ++batches;
      EXPECT_EQ(r.content_type, limits::kBatchMediaType);
    }
  }
  EXPECT_GE(batches, 3);  // refused ones, then both after the upgrade
  EXPECT_EQ(sender.stats().records_skipped, 0);
}

TEST_F(SenderTest, ResolvesTheEntityOfTheKey) {
  FakeHttpServer server(Ok);
  auto stream = MakeStream(server.url(), "", 1);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  auto paths = Paths(server.requests());
  ASSERT_GE(paths.size(), 2u);
  EXPECT_EQ(paths[0], "GET /api/v1/viewer");
  EXPECT_EQ(paths[1], "POST /api/v1/runs/alice/p");
  EXPECT_EQ(stream->progress().entity, "alice");
}

TEST_F(SenderTest, HonoursRetryAfterOn429) {
  int batch_calls = 0;
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches") && batch_calls++ == 0) {
      return {429,
              R"({"error":{"code":"resource_exhausted","message":"slow down"}})",
              {{"Retry-After", "1"}}};
    }
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 1);
  Sender sender(server.url(), FastOptions());  // backoff alone would retry after <= 0.2 s
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  std::vector<FakeRequest> batches;
  for (const auto& r : server.requests()) {
    if (r.path.ends_with("/batches")) batches.push_back(r);
  }
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_GE(batches[1].time_ms - batches[0].time_ms, 950);
  EXPECT_EQ(batches[0].body, batches[1].body);  // same body and seq: the retry is idempotent
  EXPECT_EQ(batches[0].batch_seq, batches[1].batch_seq);
  EXPECT_EQ(stream->progress().failures, 1);
}

TEST_F(SenderTest, RetriesServerErrorsWithBackoff) {
  int calls = 0;
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches") && calls++ < 3) return {503, "{}", {}};
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 1);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(sender.stats().retries, 3);
}

TEST_F(SenderTest, SkipsARecordTheServerRefuses) {
  int calls = 0;
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches") && calls++ == 0) {
      return {400, R"({"error":{"code":"invalid_argument","message":"bad"}})", {}};
    }
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 2);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  EXPECT_EQ(calls, 2);  // the first batch is not retried, the second is sent
  EXPECT_EQ(sender.stats().records_skipped, 1);
  EXPECT_EQ(stream->progress().refused, 1);  // cohort sync reports it
  EXPECT_NE(stream->progress().last_refusal.message().find("bad"), std::string::npos);
  EXPECT_TRUE(server.requests().back().path.ends_with("/finish"));
}

// An alert record is posted, byte for byte, to the writer's alerts route in its place among the
// writer's records. An answer lost after the server stored it makes the Sender post it again:
// the server's one-open-alert-per-title rule keeps it one alert (its count says two posts).
TEST_F(SenderTest, PostsAlertRecordsInOrderAndARetryDoesNotOpenASecondAlert) {
  testing::FakeCohortServer server;
  server.fail_alert_answers(1);
  WriterTarget t;
  t.base_url = server.url();
  t.api_key = "ck_test";
  t.project = "p";
  t.run_id = "run1";
  t.label = "rank_0";
  auto s = WriterStream::Create(root_ + "/run1/rank_0", t);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::string alert = AlertBody("loss diverged", "loss is NaN at step 7", "ERROR", 1234);
  ASSERT_TRUE((*s)->Append(RecordKind::kRunUpsert, 1, 1, R"({"id":"run1"})").ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kWriterJoin, 1, 2, R"({"label":"rank_0"})").ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 3, BatchBody(1)).ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kAlert, 1, 4, alert).ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kAlert, 1, 5, AlertBody("bad", "", "DEBUG", 1)).ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 6, R"({"exit_code":0})").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  Sender sender(server.url(), FastOptions());
  sender.Add(*s);
  sender.Start();
  ASSERT_TRUE(WaitComplete(s->get(), 5000));
  std::vector<std::string> paths;
  std::vector<std::string> alert_bodies;
  for (const auto& r : server.http().requests()) {
    paths.push_back(r.method + " " + r.path);
    if (r.path.ends_with("/alerts")) alert_bodies.push_back(r.body);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "GET /api/v1/viewer",
                       "POST /api/v1/runs/alice/p",
                       "POST /api/v1/runs/alice/p/run1/writers",
                       "POST /api/v1/runs/alice/p/run1/writers/rank_0/batches",
                       "POST /api/v1/runs/alice/p/run1/writers/rank_0/alerts",  // answer lost
                       "POST /api/v1/runs/alice/p/run1/writers/rank_0/alerts",  // retried
                       "POST /api/v1/runs/alice/p/run1/writers/rank_0/alerts",  // 400: skipped
                       "POST /api/v1/runs/alice/p/run1/writers/rank_0/finish",
                   }));
  ASSERT_EQ(alert_bodies.size(), 3u);
  EXPECT_EQ(alert_bodies[0], alert);
  EXPECT_EQ(alert_bodies[1], alert);
  auto alerts = server.alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].label, "rank_0");
  EXPECT_EQ(alerts[0].title, "loss diverged");
  EXPECT_EQ(alerts[0].text, "loss is NaN at step 7");
  EXPECT_EQ(alerts[0].level, "ERROR");
  EXPECT_EQ(alerts[0].time_ms, 1234);
  EXPECT_EQ(alerts[0].count, 2);
  EXPECT_EQ(sender.stats().records_skipped, 1);
  EXPECT_EQ(server.writers().at("rank_0").state, "finished");
}

// A 429 to an alert is the project's alert rate limit: the alert is refused (skipped), and the
// writer's later records are not held up behind it.
TEST_F(SenderTest, AnAlertAnswered429IsSkippedNotRetried) {
  int alert_posts = 0;
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/alerts")) {
      ++alert_posts;
      return {429,
              R"({"error":{"code":"resource_exhausted","message":"too many alerts"}})",
              {{"Retry-After", "1"}}};
    }
    return Ok(r);
  });
  std::shared_ptr<WriterStream> s = MakeAlertStream(server.url());
  Sender sender(server.url(), FastOptions());
  sender.Add(s);
  const int64_t start = NowMillis();
  sender.Start();
  ASSERT_TRUE(WaitComplete(s.get(), 5000));
  EXPECT_LT(NowMillis() - start, 900);  // not after the Retry-After
  EXPECT_EQ(alert_posts, 1);
  EXPECT_EQ(sender.stats().records_skipped, 1);
  // Dropped by the alert rate (by design), not refused: cohort sync does not fail for it.
  EXPECT_EQ(s->progress().refused, 0);
  EXPECT_TRUE(server.requests().back().path.ends_with("/finish"));
}

// A 429 that is not the alert limit (the entity's request rate, a proxy's) is retried: the alert
// the agent acknowledged was dropped for it.
TEST_F(SenderTest, AnAlertAnsweredTheRequestRate429IsRetriedAndStored) {
  std::atomic<int> alert_posts{0};
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/alerts") && alert_posts++ == 0) {
      return {429,
              R"({"error":{"code":"rate_limited","message":"slow down"}})",
              {{"Retry-After", "0"}}};
    }
    return Ok(r);
  });
  std::shared_ptr<WriterStream> s = MakeAlertStream(server.url());
  Sender sender(server.url(), FastOptions());
  sender.Add(s);
  sender.Start();
  ASSERT_TRUE(WaitComplete(s.get(), 10000));
  EXPECT_EQ(alert_posts.load(), 2);
  EXPECT_EQ(sender.stats().records_skipped, 0);
}

TEST_F(SenderTest, RefusedRunUpsertRejectsTheStream) {
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path == "/api/v1/runs/alice/p") {
      return {409, R"({"error":{"code":"already_exists","message":"run exists"}})", {}};
    }
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 2);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(stream->progress().rejected.code(), StatusCode::kAlreadyExists);
}

TEST_F(SenderTest, UnreachableServerCountsFailuresAndKeepsRecords) {
  int port;
  {
    FakeHttpServer gone(Ok);
    port = gone.port();
  }
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto stream = MakeStream(url, "alice", 1);
  Sender sender(url, FastOptions());
  sender.Add(stream);
  sender.Start();
  UploadProgress p =
      stream->WaitFor([](const UploadProgress& p) { return p.failures >= 2; }, NowMillis() + 5000);
  EXPECT_GE(p.failures, 2);
  EXPECT_EQ(p.done_seq, 0u);
  EXPECT_EQ(p.last_failure.code(), StatusCode::kUnavailable);
}

TEST_F(SenderTest, PausesAStreamOnUnauthorized) {
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    return {401, R"({"error":{"code":"unauthenticated","message":"bad key"}})", {}};
  });
  auto stream = MakeStream(server.url(), "alice", 1);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  UploadProgress p =
      stream->WaitFor([](const UploadProgress& p) { return p.failures >= 1; }, NowMillis() + 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.requests().size(), 1u);  // paused, not hammering, not dropping
  EXPECT_EQ(stream->progress().done_seq, 0u);
  EXPECT_EQ(p.last_failure.code(), StatusCode::kUnauthenticated);
}

TEST_F(SenderTest, HeartbeatsAttachedJoinedStreams) {
  FakeHttpServer server(Ok);
  WriterTarget t;
  t.base_url = server.url();
  t.entity = "alice";
  t.project = "p";
  t.run_id = "run1";
  t.label = "rank_0";
  auto s = WriterStream::Create(root_ + "/run1/rank_0", t);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kWriterJoin, 1, 1, "{}").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  (*s)->Attach(0);
  SenderOptions o = FastOptions();
  o.heartbeat_interval_s = 0.1;
  Sender sender(server.url(), o);
  sender.Add(*s);
  sender.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int heartbeats = 0;
  for (const auto& r : server.requests()) heartbeats += r.path.ends_with("/heartbeat");
  EXPECT_GE(heartbeats, 2);
}

// Uploads that failed meanwhile kept heartbeats from the server, which may have marked the writer
// crashed; a batch alone does not bring it back, a heartbeat does (store.h Heartbeat). So a
// live writer heartbeats as soon as an upload succeeds after failures, not an interval later.
TEST_F(SenderTest, ALiveWriterHeartbeatsAsSoonAsUploadsSucceedAgain) {
  std::atomic<int> failures{0};
  FakeHttpServer server([&](const FakeRequest& r) -> FakeResponse {
    if (r.path.ends_with("/batches") && failures++ < 2) return {503, "{}", {}};
    return Ok(r);
  });
  auto stream = MakeStream(server.url(), "alice", 2);
  stream->Attach(0);
  SenderOptions o = FastOptions();
  o.heartbeat_interval_s = 3600;  // never due by the interval in this test
  Sender sender(server.url(), o);
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  std::vector<std::string> paths;
  for (int i = 0; i < 200; ++i) {  // the heartbeat follows the turn's uploads
    paths = Paths(server.requests());
    if (paths.back().ends_with("/heartbeat")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto first_ok_batch =
      std::find_if(paths.begin(), paths.end(), [&, n = 0](const std::string& p) mutable {
        return p.ends_with("/batches") && ++n == 3;  // after two refusals
      });
  ASSERT_NE(first_ok_batch, paths.end());
  const long heartbeats_after = std::count_if(
      first_ok_batch, paths.end(), [](const std::string& p) { return p.ends_with("/heartbeat"); });
  const long heartbeats_before =
      std::count_if(paths.begin(), first_ok_batch,
                    [](const std::string& p) { return p.ends_with("/heartbeat"); });
  EXPECT_GE(heartbeats_after, 1);
  EXPECT_LE(heartbeats_before, 1);  // the first contact's, if any
}

// Finish and Open wait on a stream with a predicate that asks the Sender whether it is backing
// off, under the stream's lock, while the upload thread takes the Sender's lock and then reads
// the stream's progress: a lock-order inversion that froze the whole agent under load.
TEST_F(SenderTest, BackingOffInsideAStreamWaitDoesNotDeadlockTheUploadThread) {
  FakeHttpServer server(Ok);
  auto stream = MakeStream(server.url(), "alice", 1);
  stream->Attach(0);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  auto work = std::async(std::launch::async, [&] {
    std::thread waker([&] {
      for (int i = 0; i < 200000; ++i) sender.Wake();
    });
    for (int i = 0; i < 200000; ++i) {
      (void)stream->WaitFor([&](const UploadProgress&) { return sender.BackingOff(); }, 0);
    }
    waker.join();
  });
  if (work.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "deadlock: the wait and the upload thread block each other\n");
    std::_Exit(1);  // the blocked threads cannot be joined
  }
  EXPECT_FALSE(sender.BackingOff());
}

}  // namespace
}  // namespace cohort::agent
