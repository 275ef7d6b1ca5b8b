#include "server/api/ingest_binary_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "agent/batch_binary.h"
#include "agent/batch_json.h"
#include "core/coding.h"
#include "core/crc32c.h"
#include "server/api/ingest_decode.h"

namespace cohort::api {
namespace {

using agent::LogBatch;

// A batch with every kind of content: two history rows with the same keys, one with other
// keys, a row without a step, system rows, console lines, non-finite values.
LogBatch SampleBatch() {
  LogBatch b;
  b.keys = {"loss", "acc", "lr", "gpu.0.temp", "caf\xC3\xA9"};
  auto row = [&](std::vector<LogBatch::Row>* rows, int64_t step, int64_t time,
                 std::vector<std::pair<uint32_t, double>> cells) {
    LogBatch::Row r;
    r.step = step;
    r.time_ms = time;
    r.begin = uint32_t(b.cells.size());
    r.count = uint32_t(cells.size());
    for (auto [k, v] : cells) b.cells.push_back({k, v});
    rows->push_back(r);
  };
  row(&b.history, 0, 1700000000000, {{0, 2.5}, {1, 0.25}});
  row(&b.history, 1, 1700000000007, {{0, 2.25}, {1, -0.0}});
  row(&b.history, 5, 1699999999990, {{2, 1e-300}, {4, std::numeric_limits<double>::infinity()}});
  row(&b.history, -1, 1700000000100, {{0, std::numeric_limits<double>::quiet_NaN()}});
  row(&b.system, 0, 1700000000001, {{3, 61}});
  row(&b.system, 0, 1700000000002, {{3, -std::numeric_limits<double>::infinity()}});
  b.console.push_back({1700000000003, false, "epoch 1"});
  b.console.push_back({1700000000004, true, "warn \xE2\x82\xAC"});
  return b;
}

std::string Encode(const LogBatch& b, int64_t seq = 9) {
  std::string out;
  agent::AppendBatchBinary(b, seq, &out);
  return out;
}

// Header + `payload`, with a correct checksum.
std::string Seal(std::string_view payload, uint8_t version = kBinaryBatchVersion) {
  std::string out(kBinaryBatchMagic);
  out.push_back(char(version));
  out.append(3, '\0');
  coding::PutFixed32(&out, crc32c::Value(payload));
  out.append(payload);
  return out;
}

// A payload: seq 1, the given keys, then `rest` (history, system, console sections).
std::string Payload(std::vector<std::string> keys, std::string_view rest) {
  std::string p;
  coding::PutVarint64(&p, 1);
  coding::PutVarint64(&p, keys.size());
  for (const auto& k : keys) {
    coding::PutVarint64(&p, k.size());
    p.append(k);
  }
  p.append(rest);
  return p;
}

std::string Double(double d) {
  std::string s;
  coding::PutFixed64(&s, coding::DoubleBits(d));
  return s;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(char(b));
  return s;
}

Status DecodeError(std::string_view body, const ApiLimits& limits = {}) {
  auto r = DecodeBinaryIngestBatch(body, limits);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectError(const Status& s, StatusCode code, std::string_view text) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.ToString();
}

bool SameBits(double a, double b) { return coding::DoubleBits(a) == coding::DoubleBits(b); }

TEST(DecodeBinaryIngestBatch, RoundTripsEveryField) {
  auto d = DecodeBinaryIngestBatch(Encode(SampleBatch()), ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->seq, 9);
  ASSERT_EQ(d->rows.size(), 4u);
  EXPECT_EQ(d->rows[0].step, 0);
  EXPECT_EQ(d->rows[0].time_ms, 1700000000000);
  ASSERT_EQ(d->rows[0].values.size(), 2u);
  EXPECT_EQ(d->rows[0].values[0].first, "loss");
  EXPECT_EQ(d->rows[0].values[0].second, 2.5);
  EXPECT_EQ(d->rows[1].step, 1);
  EXPECT_EQ(d->rows[1].values[1].first, "acc");
  EXPECT_TRUE(SameBits(d->rows[1].values[1].second, -0.0));
  EXPECT_EQ(d->rows[2].time_ms, 1699999999990);  // time going back: negative delta
  EXPECT_EQ(d->rows[2].values[0].second, 1e-300);
  EXPECT_EQ(d->rows[2].values[1].first, "caf\xC3\xA9");
  EXPECT_EQ(d->rows[2].values[1].second, std::numeric_limits<double>::infinity());
  EXPECT_EQ(d->rows[3].step, -1);  // the server assigns it
  EXPECT_TRUE(std::isnan(d->rows[3].values[0].second));
  ASSERT_EQ(d->system.size(), 2u);
  EXPECT_EQ(d->system[0].values[0], (std::pair<std::string, double>("gpu.0.temp", 61)));
  EXPECT_EQ(d->system[1].time_ms, 1700000000002);
  EXPECT_EQ(d->system[1].values[0].second, -std::numeric_limits<double>::infinity());
  ASSERT_EQ(d->console.size(), 2u);
  EXPECT_EQ(d->console[0].stream, "stdout");
  EXPECT_EQ(d->console[1].stream, "stderr");
  EXPECT_EQ(d->console[1].text, "warn \xE2\x82\xAC");
  EXPECT_EQ(d->console[1].time_ms, 1700000000004);
}

TEST(DecodeBinaryIngestBatch, YieldsWhatTheJsonBodyYields) {
  LogBatch b = SampleBatch();
  b.history.pop_back();  // JSON cannot say "no step" from a LogBatch row (it sends -1)
  std::string json;
  agent::AppendBatchJson(b, 9, &json);
  auto from_json = DecodeIngestBatch(json, ApiLimits{});
  auto from_binary = DecodeBinaryIngestBatch(Encode(b), ApiLimits{});
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  ASSERT_TRUE(from_binary.ok()) << from_binary.status().ToString();
  ASSERT_EQ(from_json->rows.size(), from_binary->rows.size());
  for (size_t i = 0; i < from_json->rows.size(); ++i) {
    EXPECT_EQ(from_json->rows[i].step, from_binary->rows[i].step);
    EXPECT_EQ(from_json->rows[i].time_ms, from_binary->rows[i].time_ms);
    ASSERT_EQ(from_json->rows[i].values.size(), from_binary->rows[i].values.size());
    for (size_t k = 0; k < from_json->rows[i].values.size(); ++k) {
      EXPECT_EQ(from_json->rows[i].values[k].first, from_binary->rows[i].values[k].first);
      // Bit for bit, except that the agent's JSON writes -0.0 as "-0", read back as +0.0 (the
      // binary body keeps the sign: RoundTripsEveryField).
      const double a = from_json->rows[i].values[k].second;
      const double b = from_binary->rows[i].values[k].second;
      EXPECT_TRUE(SameBits(a, b) || (a == 0 && b == 0)) << i << " " << k;
    }
  }
  ASSERT_EQ(from_json->system.size(), from_binary->system.size());
  EXPECT_EQ(from_json->system[1].values, from_binary->system[1].values);
  ASSERT_EQ(from_json->console.size(), from_binary->console.size());
  EXPECT_EQ(from_json->console[1].text, from_binary->console[1].text);
  EXPECT_EQ(from_json->console[1].stream, from_binary->console[1].stream);
}

TEST(DecodeBinaryIngestBatch, EncoderRepeatsKeysOnceAndIsSmallerThanJson) {
  LogBatch b;
  for (int k = 0; k < 10; ++k) b.keys.push_back("train/metric_" + std::to_string(k));
  for (int r = 0; r < 1000; ++r) {
    b.history.push_back({r, 1700000000000 + r, uint32_t(b.cells.size()), 10});
    for (uint32_t k = 0; k < 10; ++k) b.cells.push_back({k, 0.1 * r + k});
  }
  std::string json;
  agent::AppendBatchJson(b, 1, &json);
  const std::string binary = Encode(b, 1);
  // 10 values of 8 bytes plus a flag byte, a step and a time delta per row.
  EXPECT_LT(binary.size(), 1000u * 86 + 300);
  EXPECT_LT(binary.size() * 2, json.size());
  auto d = DecodeBinaryIngestBatch(binary, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->rows.size(), 1000u);
  EXPECT_EQ(d->rows[999].values[9].first, "train/metric_9");
  EXPECT_EQ(d->rows[999].values[9].second, 0.1 * 999 + 9);
}

TEST(DecodeBinaryIngestBatch, EncoderDropsBadKeysAndKeepsTheLastOfARepeatedKey) {
  LogBatch b;
  b.keys = {"", std::string(300, 'k'), "a", "bad\xFF"};
  b.history.push_back({0, 1, 0, 5});
  b.cells = {{0, 1}, {1, 2}, {2, 3}, {2, 4}, {3, 5}};
  std::string body;
  agent::BatchJsonStats stats = agent::AppendBatchBinary(b, 1, &body);
  EXPECT_EQ(stats.dropped_keys, 2);
  EXPECT_EQ(stats.points, 2);
  auto d = DecodeBinaryIngestBatch(body, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->rows[0].values.size(), 2u);
  EXPECT_EQ(d->rows[0].values[0], (std::pair<std::string, double>("a", 4)));
  EXPECT_EQ(d->rows[0].values[1].first, "bad\xEF\xBF\xBD");  // U+FFFD
}

TEST(DecodeBinaryIngestBatch, EveryTruncationIsAnError) {
  const std::string body = Encode(SampleBatch());
  for (size_t n = 0; n < body.size(); ++n) {
    std::string cut = body.substr(0, n);
    // Re-seal so the checksum passes and the payload's own truncation is what fails.
    std::string sealed =
        n > kBinaryBatchHeaderBytes ? Seal(cut.substr(kBinaryBatchHeaderBytes)) : cut;
    auto d = DecodeBinaryIngestBatch(sealed, ApiLimits{});
    EXPECT_FALSE(d.ok()) << "accepted a body cut to " << n << " bytes";
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    }
  }
  ExpectError(DecodeError(body.substr(0, 7)), StatusCode::kInvalidArgument, "truncated header");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({1, 1, 0, 2, 1, 0})))),
              StatusCode::kInvalidArgument, "history[0] values");
}

TEST(DecodeBinaryIngestBatch, BadMagicVersionFlagsAndChecksum) {
  std::string body = Encode(SampleBatch());
  std::string bad = body;
  bad[0] = 'X';
  ExpectError(DecodeError(bad), StatusCode::kInvalidArgument, "does not start with");
  bad = body;
  bad[4] = 2;
  ExpectError(DecodeError(bad), StatusCode::kInvalidArgument, "unknown version 2");
  EXPECT_EQ(BinaryBatchVersion(bad), std::optional<uint8_t>(2));
  EXPECT_EQ(BinaryBatchVersion("{\"seq\":1}"), std::nullopt);
  bad = body;
  bad[5] = 1;
  ExpectError(DecodeError(bad), StatusCode::kInvalidArgument, "header flags");
  bad = body;
  bad[bad.size() - 1] ^= 0x20;
  ExpectError(DecodeError(bad), StatusCode::kInvalidArgument, "bad checksum");
}

TEST(DecodeBinaryIngestBatch, KeyIndexOutOfRange) {
  // history: 1 row, flags 0, time 2 (zigzag 1), 1 cell, key index 3 of 1 key.
  std::string rest = Bytes({1, 0, 2, 1, 3}) + Double(1) + Bytes({0, 0});
  ExpectError(DecodeError(Seal(Payload({"a"}, rest))), StatusCode::kInvalidArgument,
              "history[0]: key index 3 out of range (1 keys)");
}

TEST(DecodeBinaryIngestBatch, KeyRepeatedInARow) {
  std::string rest = Bytes({1, 0, 2, 2, 0, 0}) + Double(1) + Double(2) + Bytes({0, 0});
  ExpectError(DecodeError(Seal(Payload({"a", "b"}, rest))), StatusCode::kInvalidArgument,
              "key 'a' appears twice in the row");
}

TEST(DecodeBinaryIngestBatch, BadKeyTables) {
  std::string none = Bytes({0, 0, 0});
  ExpectError(DecodeError(Seal(Payload({"a", "a"}, none))), StatusCode::kInvalidArgument,
              "appears twice in the key table");
  ExpectError(DecodeError(Seal(Payload({""}, none))), StatusCode::kInvalidArgument,
              "keys[0]: empty key");
  ExpectError(DecodeError(Seal(Payload({std::string(257, 'k')}, none))),
              StatusCode::kInvalidArgument, "key longer than 256 bytes");
  ExpectError(DecodeError(Seal(Payload({"ok", "\xC0\xAF"}, none))), StatusCode::kInvalidArgument,
              "keys[1]: key is not valid UTF-8");
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  ExpectError(DecodeError(Seal(Payload({"a", "b", "c"}, none)), limits),
              StatusCode::kPayloadTooLarge, "more than 2 distinct keys");
}

TEST(DecodeBinaryIngestBatch, TooManyRowsIsPayloadTooLarge) {
  ApiLimits limits;
  limits.max_rows_per_batch = 2;
  std::string rest = Bytes({2, 0, 2, 1, 0}) + Double(1) + Bytes({2, 2}) + Double(2) +
                     Bytes({1, 0, 2, 1, 0}) + Double(3) + Bytes({0});
  ExpectError(DecodeError(Seal(Payload({"a"}, rest)), limits), StatusCode::kPayloadTooLarge,
              "more than 2 rows");
  EXPECT_TRUE(DecodeBinaryIngestBatch(Seal(Payload({"a"}, rest)), ApiLimits{}).ok());
}

TEST(DecodeBinaryIngestBatch, MalformedRows) {
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({1, 2, 2}) + Double(1) + Bytes({0, 0})))),
              StatusCode::kInvalidArgument, "repeats the keys of a previous row, but is the first");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({1, 8, 2, 0, 0, 0})))),
              StatusCode::kInvalidArgument, "history[0]: unknown row flags 0x08");
  // A system row with a step flag.
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({0, 1, 1, 2, 0, 0})))),
              StatusCode::kInvalidArgument, "system[0]: unknown row flags 0x01");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({1, 0, 2, 2, 0}) + Double(1) + Bytes({0, 0})))),
              StatusCode::kInvalidArgument, "2 cells but only 1 keys");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({100, 0, 0})))), StatusCode::kInvalidArgument,
              "history count 100 exceeds what the remaining");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({0, 0, 0, 7})))), StatusCode::kInvalidArgument,
              "1 unexpected bytes after the console lines");
  std::string zero_seq = Payload({"a"}, Bytes({0, 0, 0}));
  zero_seq[0] = 0;
  ExpectError(DecodeError(Seal(zero_seq)), StatusCode::kInvalidArgument, "seq: must be > 0");
}

TEST(DecodeBinaryIngestBatch, MalformedConsoleLines) {
  ExpectError(DecodeError(Seal(Payload({}, Bytes({0, 0, 1, 2, 2, 1, 'x'})))),
              StatusCode::kInvalidArgument, "console[0].stream: 2 is not 0 or 1");
  ExpectError(DecodeError(Seal(Payload({}, Bytes({0, 0, 1, 2, 0, 1, 0xFF})))),
              StatusCode::kInvalidArgument, "console[0].text: not valid UTF-8");
  ApiLimits limits;
  limits.max_console_line_bytes = 2;
  ExpectError(DecodeError(Seal(Payload({}, Bytes({0, 0, 1, 2, 0, 3, 'a', 'b', 'c'}))), limits),
              StatusCode::kInvalidArgument, "console[0].text: longer than 2 bytes");
}

TEST(DecodeBinaryIngestBatch, ContentTypeMatching) {
  EXPECT_TRUE(IsBinaryBatchContentType("application/vnd.cohort.batch"));
  EXPECT_TRUE(IsBinaryBatchContentType("Application/Vnd.Cohort.Batch; v=1"));
  EXPECT_FALSE(IsBinaryBatchContentType("application/json"));
  EXPECT_FALSE(IsBinaryBatchContentType(""));
  EXPECT_FALSE(IsBinaryBatchContentType("application/vnd.cohort.batchx"));
}

}  // namespace
}  // namespace cohort::api
