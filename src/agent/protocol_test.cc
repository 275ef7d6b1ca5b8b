#include "agent/protocol.h"

#include <gtest/gtest.h>

#include <cmath>

#include "agent/record.h"

namespace cohort::agent {
namespace {

LogBatch SampleBatch() {
  LogBatch b;
  b.keys = {"loss", "acc", "gpu.0.temp"};
  b.cells = {{0, 0.5}, {1, 0.9}, {0, -1.25}, {2, 61}};
  b.history = {{.step = 7, .time_ms = 1700000000123, .begin = 0, .count = 2},
               {.step = -3, .time_ms = 1700000000124, .begin = 2, .count = 1}};
  b.system = {{.step = 0, .time_ms = 1700000000200, .begin = 3, .count = 1}};
  b.console = {{1700000000300, true, "warning: x"}, {1700000000301, false, ""}};
  return b;
}

TEST(FrameTest, RoundTripsFramesFedByteByByte) {
  std::string wire;
  AppendFrame(MessageType::kHello, R"({"version":1})", &wire);
  AppendFrame(MessageType::kLog, std::string(100000, 'x'), &wire);
  AppendFrame(MessageType::kAck, "", &wire);
  FrameDecoder dec;
  std::vector<Frame> got;
  for (char c : wire) {
    dec.Feed(&c, 1);
    Frame f;
    while (true) {
      auto r = dec.Next(&f);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (!*r) break;
      got.push_back(f);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, MessageType::kHello);
  EXPECT_EQ(got[0].payload, R"({"version":1})");
  EXPECT_EQ(got[1].type, MessageType::kLog);
  EXPECT_EQ(got[1].payload.size(), 100000u);
  EXPECT_EQ(got[2].type, MessageType::kAck);
  EXPECT_EQ(got[2].payload, "");
  EXPECT_EQ(dec.buffered(), 0u);
}

TEST(FrameTest, CorruptedByteIsReportedAsCorruption) {
  std::string wire;
  AppendFrame(MessageType::kLog, "payload", &wire);
  wire[10] ^= 0x40;
  FrameDecoder dec;
  dec.Feed(wire.data(), wire.size());
  Frame f;
  auto r = dec.Next(&f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
}

TEST(FrameTest, OversizedLengthIsCorruption) {
  std::string wire(8, '\xff');
  FrameDecoder dec;
  dec.Feed(wire.data(), wire.size());
  Frame f;
  EXPECT_EQ(dec.Next(&f).status().code(), StatusCode::kCorruption);
}

TEST(NumberedPayloadTest, SplitsFrameNumberAndBody) {
  std::string p = NumberedPayload(300, "body");
  uint64_t frame = 0;
  std::string_view body;
  ASSERT_TRUE(SplitNumbered(p, &frame, &body).ok());
  EXPECT_EQ(frame, 300u);
  EXPECT_EQ(body, "body");
  EXPECT_FALSE(SplitNumbered("\x80", &frame, &body).ok());
}

TEST(LogBatchTest, RoundTripsEveryField) {
  LogBatch b = SampleBatch();
  std::string bytes;
  EncodeLogBatch(b, &bytes);
  auto d = DecodeLogBatch(bytes);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->keys, b.keys);
  ASSERT_EQ(d->history.size(), 2u);
  EXPECT_EQ(d->history[0].step, 7);
  EXPECT_EQ(d->history[1].step, -3);
  EXPECT_EQ(d->history[0].time_ms, 1700000000123);
  EXPECT_EQ(d->history[0].count, 2u);
  EXPECT_EQ(d->cells[d->history[0].begin + 1].value, 0.9);
  EXPECT_EQ(d->cells[d->history[1].begin].value, -1.25);
  ASSERT_EQ(d->system.size(), 1u);
  EXPECT_EQ(d->keys[d->cells[d->system[0].begin].key], "gpu.0.temp");
  ASSERT_EQ(d->console.size(), 2u);
  EXPECT_TRUE(d->console[0].is_stderr);
  EXPECT_EQ(d->console[0].text, "warning: x");
  EXPECT_EQ(d->points(), 4u);
}

TEST(LogBatchTest, KeepsNaNBits) {
  LogBatch b;
  b.keys = {"x"};
  b.cells = {{0, std::nan("")}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 1}};
  std::string bytes;
  EncodeLogBatch(b, &bytes);
  auto d = DecodeLogBatch(bytes);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::isnan(d->cells[0].value));
}

// Found by tests/fuzz/protocol_fuzzer (tests/fuzz/regressions/protocol/short_system_rows): a
// system row takes only 2 bytes (time and cell count), but the decoder's guard against absurd
// row counts assumed 3, so valid batches of small system rows were rejected as corrupt.
TEST(LogBatchTest, SystemRowsWithoutCellsRoundTrip) {
  LogBatch b;
  b.system = {{.time_ms = 76, .begin = 0, .count = 0}, {.time_ms = 0, .begin = 0, .count = 0}};
  std::string bytes;
  EncodeLogBatch(b, &bytes);
  auto d = DecodeLogBatch(bytes);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->system.size(), 2u);
  EXPECT_EQ(d->system[0].time_ms, 76);
}

TEST(LogBatchTest, TruncationIsCorruption) {
  std::string bytes;
  EncodeLogBatch(SampleBatch(), &bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = DecodeLogBatch(std::string_view(bytes).substr(0, n));
    EXPECT_FALSE(d.ok()) << "prefix " << n;
  }
}

TEST(LogBatchTest, KeyIndexOutOfRangeIsCorruption) {
  LogBatch b;
  b.keys = {"x"};
  b.cells = {{5, 1.0}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 1}};
  std::string bytes;
  EncodeLogBatch(b, &bytes);
  EXPECT_EQ(DecodeLogBatch(bytes).status().code(), StatusCode::kCorruption);
}

TEST(ControlMessageTest, OpenRequestRoundTrips) {
  OpenRequest m;
  m.session = 0x7fffffffffffff01ull;
  m.base_url = "http://h:1";
  m.api_key = "ck_x";
  m.project = "p";
  m.run_id = "r1";
  m.label = "rank_0";
  m.offline = true;
  m.run_json = R"({"id":"r1"})";
  m.writer_json = R"({"label":"rank_0"})";
  m.stats_interval_s = 2.5;
  m.gpu_ids = std::vector<int>{0, 3};
  m.pid = 42;
  m.wait_ms = 100;
  auto p = ParseOpenRequest(ToJson(m));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->session, m.session);
  EXPECT_EQ(p->base_url, m.base_url);
  EXPECT_EQ(p->run_json, m.run_json);
  EXPECT_TRUE(p->offline);
  EXPECT_EQ(p->gpu_ids, m.gpu_ids);
  EXPECT_EQ(p->stats_interval_s, 2.5);
  EXPECT_EQ(p->wait_ms, 100);
}

TEST(ControlMessageTest, OpenRequestWithoutLabelIsRejected) {
  auto p = ParseOpenRequest(R"({"session":1,"base_url":"u","project":"p","run_id":"r"})");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("label"), std::string::npos);
}

TEST(ControlMessageTest, OpenRequestWithOutOfRangeGpuIdIsRejected) {
  const std::string head = R"({"session":1,"base_url":"u","project":"p","run_id":"r",)"
                           R"("label":"rank_0","gpu_ids":)";
  // 2^32 + 1 used to become GPU 1 (truncated to int); -1 and INT_MAX + 1 are no GPU either.
  for (const char* ids : {"[0,4294967297]", "[-1]", "[2147483648]"}) {
    auto p = ParseOpenRequest(head + ids + "}");
    ASSERT_FALSE(p.ok()) << ids;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << ids;
    EXPECT_NE(p.status().message().find("open.gpu_ids["), std::string::npos)
        << p.status().ToString();
    EXPECT_NE(p.status().message().find("is not a GPU index"), std::string::npos)
        << p.status().ToString();
  }
  auto ok = ParseOpenRequest(head + "[0,7,2147483647]}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok->gpu_ids, (std::vector<int>{0, 7, 2147483647}));
}

TEST(ControlMessageTest, RepliesRoundTrip) {
  OpenReply o;
  o.ok = true;
  o.entity = "alice";
  o.next_step = 12;
  o.last_frame = 99;
  o.confirmed = true;
  auto po = ParseOpenReply(ToJson(o));
  ASSERT_TRUE(po.ok());
  EXPECT_EQ(po->entity, "alice");
  EXPECT_EQ(po->next_step, 12);
  EXPECT_EQ(po->last_frame, 99u);
  EXPECT_TRUE(po->confirmed);

  FinishRequest f;
  f.exit_code = 143;
  f.state = "killed";
  auto pf = ParseFinishRequest(ToJson(f));
  ASSERT_TRUE(pf.ok());
  EXPECT_EQ(pf->exit_code, 143);
  EXPECT_EQ(pf->state, "killed");

  Status e = ParseError(ErrorJson(Status::NotFound("no run")));
  EXPECT_EQ(e.code(), StatusCode::kNotFound);
}

TEST(RecordTest, RoundTripsHeaderAndBody) {
  std::string bytes =
      EncodeRecord(RecordKind::kWriterFinish, 1234567, 77, 5, R"({"exit_code":0})");
  auto r = DecodeRecord(bytes);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, RecordKind::kWriterFinish);
  EXPECT_EQ(r->seq, 1234567u);
  EXPECT_EQ(r->session, 77u);
  EXPECT_EQ(r->frame, 5u);
  EXPECT_EQ(r->body, R"({"exit_code":0})");
  EXPECT_FALSE(DecodeRecord(std::string(30, '\x09')).ok());
}

}  // namespace
}  // namespace cohort::agent
