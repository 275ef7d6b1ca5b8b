#include "agent/sender.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <future>
#include <thread>

#include "agent/agent_log.h"
#include "agent/batch_binary.h"
#include "agent/fake_http_server_for_test.h"
#include "agent/protocol.h"
#include "core/clock.h"
#include "core/coding.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;

std::string BatchBody(double loss) {
  LogBatch b;
  b.keys = {"loss"};
  b.cells = {{0, loss}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 1}};
  std::string out;
  EncodeLogBatch(b, &out);
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

TEST_F(SenderTest, UploadsRecordsInOrderWithTheirSeq) {
  FakeHttpServer server(Ok);
  auto stream = MakeStream(server.url(), "alice", 2);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  auto reqs = server.requests();
  // Before its first batch the Sender asks which bodies the server reads (this one lists no
  // "ingest_formats": JSON).
  EXPECT_EQ(Paths(reqs), (std::vector<std::string>{
                             "POST /api/v1/runs/alice/p",
                             "POST /api/v1/runs/alice/p/run1/writers",
                             "GET /healthz",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/batches",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/batches",
                             "POST /api/v1/runs/alice/p/run1/writers/rank_0/finish",
                         }));
  EXPECT_EQ(reqs[0].authorization, "Bearer ck_test");
  auto b1 = json::Parse(reqs[3].body);
  auto b2 = json::Parse(reqs[4].body);
  ASSERT_TRUE(b1.ok() && b2.ok());
  EXPECT_EQ(b2->at("seq").as_int64(), b1->at("seq").as_int64() + 1);
  EXPECT_EQ(b2->at("history").at(0).at("values").at("loss").to_number<double>(), 1.0);
  UploadProgress p = stream->progress();
  EXPECT_TRUE(p.joined);
  EXPECT_EQ(p.next_step, 5);
  EXPECT_EQ(p.run_name, "brave-run");
  EXPECT_EQ(server.connections(), 1u);  // keep-alive
}

// A server that reads binary batches; `batch_status(i)` answers the i-th batch request.
FakeHttpServer::Handler BinaryServer(std::function<int(int)> batch_status) {
  auto calls = std::make_shared<int>(0);
  return [calls, batch_status](const FakeRequest& r) -> FakeResponse {
    if (r.path == "/healthz") return {200, R"({"ingest_formats":["json","cohort-batch-v1"]})", {}};
    if (r.path.ends_with("/batches")) {
      int status = batch_status((*calls)++);
      if (status != 200) return {status, R"({"error":{"code":"unavailable"}})", {}};
      return {200, R"({"duplicate":false,"points":1,"next_step":1})", {}};
    }
    return Ok(r);
  };
}

// The seq of a binary batch body (after the 12-byte header).
uint64_t BinarySeq(const std::string& body) {
  std::string_view in(body);
  in.remove_prefix(std::min<size_t>(12, in.size()));
  uint64_t seq = 0;
  EXPECT_TRUE(coding::GetVarint64(&in, &seq));
  return seq;
}

// The bodies and seqs of the batch requests, each checked against a fresh encoding of the
// batch `loss` it carries (BatchBody(i) for the i-th distinct seq).
std::vector<uint64_t> CheckBinaryBatches(const std::vector<FakeRequest>& reqs) {
  std::vector<uint64_t> seqs;
  uint64_t first = 0;
  for (const FakeRequest& r : reqs) {
    if (!r.path.ends_with("/batches")) continue;
    uint64_t seq = BinarySeq(r.body);
    if (seqs.empty()) first = seq;
    seqs.push_back(seq);
    auto batch = DecodeLogBatch(BatchBody(double(seq - first)));
    EXPECT_TRUE(batch.ok());
    std::string expected;
    AppendBatchBinary(*batch, int64_t(seq), &expected);
    EXPECT_EQ(r.body, expected) << "batch seq " << seq;
  }
  return seqs;
}

TEST_F(SenderTest, EncodesTheNextBinaryBatchWhileOneIsInFlight) {
  FakeHttpServer server(BinaryServer([](int) { return 200; }));
  auto stream = MakeStream(server.url(), "alice", 8);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  std::vector<uint64_t> seqs = CheckBinaryBatches(server.requests());
  ASSERT_EQ(seqs.size(), 8u);
  for (size_t i = 1; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], seqs[0] + i);
  SenderStats st = sender.stats();
  EXPECT_EQ(st.binary_batches, 8);
  // Every batch but the first (after the join, which is not a batch) was encoded ahead.
  EXPECT_EQ(st.prepared_batches, 7);
  EXPECT_EQ(server.connections(), 1u);  // still one request at a time on one connection
}

TEST_F(SenderTest, RetriedBinaryBatchGoesOutAgainBeforeTheOneEncodedAhead) {
  // The second batch fails once (503) while the third is being encoded ahead.
  FakeHttpServer server(BinaryServer([](int i) { return i == 1 ? 503 : 200; }));
  auto stream = MakeStream(server.url(), "alice", 4);
  Sender sender(server.url(), FastOptions());
  sender.Add(stream);
  sender.Start();
  ASSERT_TRUE(WaitComplete(stream.get(), 5000));
  std::vector<uint64_t> seqs = CheckBinaryBatches(server.requests());
  ASSERT_EQ(seqs.size(), 5u);
  const uint64_t s0 = seqs[0];
  EXPECT_EQ(seqs, (std::vector<uint64_t>{s0, s0 + 1, s0 + 1, s0 + 2, s0 + 3}));
  SenderStats st = sender.stats();
  EXPECT_EQ(st.binary_batches, 4);
  EXPECT_EQ(st.retries, 1);
  // The retried batch was encoded again (what was ready was the one after it); the rest ahead.
  EXPECT_EQ(st.prepared_batches, 2);
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
  EXPECT_EQ(batches[0].body, batches[1].body);  // same seq: the retry is idempotent
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
  EXPECT_TRUE(server.requests().back().path.ends_with("/finish"));
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
