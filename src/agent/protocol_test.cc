#include "agent/protocol.h"

#include <gtest/gtest.h>

#include <cmath>

#include "agent/record.h"

namespace cohort::agent {
namespace {

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

// A frame is a length, a type and the payload: no checksum of its own (a log frame's batch
// carries one, which the agent checks).
TEST(FrameTest, LayoutIsLengthTypePayload) {
  std::string wire;
  AppendFrame(MessageType::kLog, "abc", &wire);
  EXPECT_EQ(wire, std::string("\x04\0\0\0\x05", 5) + "abc");
}

TEST(FrameTest, ZeroOrOversizedLengthIsCorruption) {
  FrameDecoder zero;
  std::string none(4, '\0');
  zero.Feed(none.data(), none.size());
  Frame f;
  EXPECT_EQ(zero.Next(&f).status().code(), StatusCode::kCorruption);
  std::string wire(8, '\xff');
  FrameDecoder dec;
  dec.Feed(wire.data(), wire.size());
  EXPECT_EQ(dec.Next(&f).status().code(), StatusCode::kCorruption);
}

TEST(NumberedPayloadTest, ANumberedFrameIsTheFrameOfTheNumberedPayload) {
  for (uint64_t frame : {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{1} << 40, UINT64_MAX}) {
    std::string a, b;
    AppendFrame(MessageType::kLog, NumberedPayload(frame, "body"), &a);
    AppendNumberedFrame(MessageType::kLog, frame, "body", &b);
    EXPECT_EQ(a, b) << frame;
  }
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

TEST(ControlMessageTest, HelloFeaturesRoundTripAndAnOldHelloHasNone) {
  HelloMessage reply;
  reply.pid = 42;
  reply.features = {std::string(kAgentFeatureAlert)};
  auto back = ParseHello(ToJson(reply));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pid, 42);
  EXPECT_EQ(back->features, std::vector<std::string>{"alert"});
  auto old = ParseHello(R"({"version":2,"pid":7})");  // an agent from before features
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->features.empty());
  EXPECT_FALSE(ParseHello(R"({"version":2,"features":"alert"})").ok());
  EXPECT_FALSE(ParseHello(R"({"version":2,"features":[1]})").ok());
}

TEST(ControlMessageTest, RepliesRoundTrip) {
  OpenReply o;
  o.ok = true;
  o.entity = "alice";
  o.next_step = 12;
  o.last_frame = 99;
  o.confirmed = true;
  o.max_media_file_bytes = int64_t{5} << 30;
  o.max_media_per_step = 7;
  o.run_fields = R"({"group":"g","tags":["a"],"summary":{"loss":0.5}})";
  auto po = ParseOpenReply(ToJson(o));
  ASSERT_TRUE(po.ok());
  EXPECT_EQ(po->entity, "alice");
  EXPECT_EQ(po->next_step, 12);
  EXPECT_EQ(po->last_frame, 99u);
  EXPECT_TRUE(po->confirmed);
  EXPECT_EQ(po->max_media_file_bytes, int64_t{5} << 30);
  EXPECT_EQ(po->max_media_per_step, 7);
  EXPECT_EQ(po->run_fields, o.run_fields);
  // An agent that does not say them (older, or not confirmed): not known.
  auto old = ParseOpenReply(R"({"ok":true,"confirmed":false})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->max_media_file_bytes, 0);
  EXPECT_EQ(old->max_media_per_step, 0);
  EXPECT_EQ(old->run_fields, "");
  EXPECT_FALSE(ParseOpenReply(R"({"ok":true,"run_fields":"[1]"})").ok());

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

TEST(ControlMessageTest, RunFieldsOfAnswerKeepsWhatAResumedRunShows) {
  // The server's answer to a run upsert (RunToJson): its group, job_type, notes, tags, config
  // and summary pass on; the rest (state, metadata, ...) does not; a field of another type is
  // left out.
  EXPECT_EQ(RunFieldsOfAnswer(R"({"id":"X","name":"n","group":"g","job_type":"train",)"
                              R"("notes":"","tags":["a","b",3],"summary":{"loss":2},)"
                              R"("config":{"lr":1,"opt":{"name":"adam"}},"state":"running",)"
                              R"("metadata":{"host":"h"}})"),
            R"({"group":"g","job_type":"train","notes":"","tags":["a","b"],)"
            R"("config":{"lr":1,"opt":{"name":"adam"}},"summary":{"loss":2}})");
  EXPECT_EQ(RunFieldsOfAnswer(R"({"group":null,"tags":"x","config":[1],"summary":[]})"), "{}");
  EXPECT_EQ(RunFieldsOfAnswer("not json"), "");
  EXPECT_EQ(RunFieldsOfAnswer("[]"), "");
  // A summary too large for an open reply is left out; the other fields stay.
  const std::string big(kMaxRunFieldsBytes, 'x');
  EXPECT_EQ(RunFieldsOfAnswer(R"({"group":"g","summary":{"k":")" + big + R"("}})"),
            R"({"group":"g"})");
  // So is a config too large, and the summary stays; with both large, the config is kept when
  // it fits alone.
  EXPECT_EQ(
      RunFieldsOfAnswer(R"({"group":"g","config":{"k":")" + big + R"("},"summary":{"loss":2}})"),
      R"({"group":"g","summary":{"loss":2}})");
  const std::string half(kMaxRunFieldsBytes / 2, 'y');
  EXPECT_EQ(
      RunFieldsOfAnswer(R"({"config":{"k":")" + half + R"("},"summary":{"k":")" + half + R"("}})"),
      R"({"config":{"k":")" + half + R"("}})");
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
  auto alert = DecodeRecord(EncodeRecord(RecordKind::kAlert, 9, 1, 2, R"({"title":"t"})"));
  ASSERT_TRUE(alert.ok());
  EXPECT_EQ(alert->kind, RecordKind::kAlert);
  EXPECT_EQ(uint8_t(alert->kind), 7);  // docs/formats.md: the WAL's record kinds
  EXPECT_EQ(alert->body, R"({"title":"t"})");
  EXPECT_FALSE(DecodeRecord(std::string(30, '\x08')).ok());
  EXPECT_EQ(MessageTypeName(MessageType::kAlert), "alert");
  EXPECT_EQ(uint8_t(MessageType::kAlert), 15);
}

}  // namespace
}  // namespace cohort::agent
