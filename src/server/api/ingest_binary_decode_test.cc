#include "server/api/ingest_binary_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/batch_format.h"
#include "core/coding.h"
#include "core/crc32c.h"
#include "server/api/ingest_decode.h"

namespace cohort::api {
namespace {

using store::IngestBatch;
using store::kAssignStep;

// A batch with every kind of content: two history rows with the same keys, one with other
// keys, a row without a step, system rows, console lines, non-finite values.
batch::Batch SampleBatch() {
  batch::Batch b;
  b.keys = {"loss", "acc", "lr", "gpu.0.temp", "caf\xC3\xA9"};
  auto row = [&](std::vector<batch::Batch::Row>* rows, int64_t step, int64_t time,
                 std::vector<std::pair<uint32_t, double>> cells) {
    rows->push_back({step, time, uint32_t(b.cells.size()), uint32_t(cells.size())});
    for (auto [k, v] : cells) b.cells.push_back({k, v});
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

std::string Encode(const batch::Batch& b) {
  std::string out;
  batch::Encode(b, &out);
  return out;
}

// The values of one section by row, key -> value bits, from the columns.
std::map<uint32_t, std::map<std::string, uint64_t>> Cells(const IngestBatch& b, bool system) {
  std::map<uint32_t, std::map<std::string, uint64_t>> out;
  for (const auto& c : b.columns) {
    if (c.system != system) continue;
    EXPECT_EQ(c.rows.size(), c.values.size());
    for (size_t i = 0; i < c.rows.size(); ++i) {
      EXPECT_TRUE(i == 0 || c.rows[i - 1] < c.rows[i]) << c.key;
      out[c.rows[i]][c.key] = coding::DoubleBits(c.values[i]);
    }
  }
  return out;
}

uint64_t Bits(double d) { return coding::DoubleBits(d); }

// Header + `payload`, with a correct checksum.
std::string Seal(std::string_view payload, uint8_t version = limits::kBatchVersion) {
  std::string out(batch::kMagic);
  out.push_back(char(version));
  out.append(3, '\0');
  coding::PutFixed32(&out, crc32c::Value(payload));
  out.append(payload);
  return out;
}

// A payload: the given keys, then `rest` (history, system, console sections).
std::string Payload(std::vector<std::string> keys, std::string_view rest) {
  std::string p;
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
  auto r = DecodeBinaryIngestBatch(body, 1, limits);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectError(const Status& s, StatusCode code, std::string_view text) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.ToString();
}

TEST(DecodeBinaryIngestBatch, RoundTripsEveryFieldIntoColumns) {
  auto d = DecodeBinaryIngestBatch(Encode(SampleBatch()), 9, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->seq, 9);
  EXPECT_EQ(d->history_step, (std::vector<int64_t>{0, 1, 5, kAssignStep}));
  EXPECT_EQ(d->history_time_ms,
            (std::vector<int64_t>{1700000000000, 1700000000007, 1699999999990, 1700000000100}));
  EXPECT_EQ(d->system_time_ms, (std::vector<int64_t>{1700000000001, 1700000000002}));
  // One column per key and section: loss, acc, lr, café in history; gpu.0.temp in system.
  ASSERT_EQ(d->columns.size(), 5u);
  EXPECT_EQ(d->points(), 9);
  auto history = Cells(*d, false);
  EXPECT_EQ(history[0], (std::map<std::string, uint64_t>{{"loss", Bits(2.5)}, {"acc", Bits(0.25)}}));
  EXPECT_EQ(history[1]["acc"], Bits(-0.0));
  EXPECT_EQ(history[2], (std::map<std::string, uint64_t>{
                            {"lr", Bits(1e-300)},
                            {"caf\xC3\xA9", Bits(std::numeric_limits<double>::infinity())}}));
  EXPECT_EQ(history[3]["loss"], Bits(std::numeric_limits<double>::quiet_NaN()));
  auto system = Cells(*d, true);
  EXPECT_EQ(system[0], (std::map<std::string, uint64_t>{{"system/gpu.0.temp", Bits(61)}}));
  EXPECT_EQ(system[1]["system/gpu.0.temp"], Bits(-std::numeric_limits<double>::infinity()));
  ASSERT_EQ(d->console.size(), 2u);
  EXPECT_EQ(d->console[0].stream, "stdout");
  EXPECT_EQ(d->console[1].stream, "stderr");
  EXPECT_EQ(d->console[1].text, "warn \xE2\x82\xAC");
  EXPECT_EQ(d->console[1].time_ms, 1700000000004);
}

TEST(DecodeBinaryIngestBatch, AKeyInBothSectionsHasAColumnInEach) {
  batch::Batch b;
  b.keys = {"temp"};
  b.cells = {{0, 1}, {0, 2}};
  b.history = {{0, 1, 0, 1}};
  b.system = {{0, 1, 1, 1}};
  auto d = DecodeBinaryIngestBatch(Encode(b), 1, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->columns.size(), 2u);
  EXPECT_EQ(d->columns[0].key, "temp");
  EXPECT_FALSE(d->columns[0].system);
  EXPECT_EQ(d->columns[1].key, "system/temp");
  EXPECT_TRUE(d->columns[1].system);
}

TEST(DecodeBinaryIngestBatch, YieldsWhatTheJsonBodyYields) {
  const std::string json = R"({"seq": 9,
      "history": [{"step": 0, "time": 1700000000000, "values": {"loss": 2.5, "acc": 0.25}},
                  {"step": 1, "time": 1700000000007, "values": {"loss": 2.25, "acc": -1}},
                  {"time": 1700000000100, "values": {"loss": "NaN"}}],
      "system": [{"time": 1700000000001, "values": {"gpu.0.temp": 61}}],
      "console": [{"time": 1700000000003, "stream": "stderr", "text": "warn \u20ac"}]})";
  batch::Batch b;
  b.keys = {"loss", "acc", "gpu.0.temp"};
  b.cells = {{0, 2.5}, {1, 0.25}, {0, 2.25}, {1, -1}, {0, std::nan("")}, {2, 61}};
  b.history = {{0, 1700000000000, 0, 2}, {1, 1700000000007, 2, 2}, {-1, 1700000000100, 4, 1}};
  b.system = {{0, 1700000000001, 5, 1}};
  b.console = {{1700000000003, true, "warn \xE2\x82\xAC"}};
  auto from_json = DecodeIngestBatch(json, ApiLimits{});
  auto from_binary = DecodeBinaryIngestBatch(Encode(b), 9, ApiLimits{});
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  ASSERT_TRUE(from_binary.ok()) << from_binary.status().ToString();
  EXPECT_EQ(from_json->seq, from_binary->seq);
  EXPECT_EQ(from_json->history_step, from_binary->history_step);
  EXPECT_EQ(from_json->history_time_ms, from_binary->history_time_ms);
  EXPECT_EQ(from_json->system_time_ms, from_binary->system_time_ms);
  EXPECT_EQ(Cells(*from_json, false), Cells(*from_binary, false));
  EXPECT_EQ(Cells(*from_json, true), Cells(*from_binary, true));
  ASSERT_EQ(from_json->console.size(), 1u);
  EXPECT_EQ(from_json->console[0].text, from_binary->console[0].text);
  EXPECT_EQ(from_json->console[0].stream, from_binary->console[0].stream);
}

TEST(DecodeBinaryIngestBatch, RowsRepeatKeysOnceAndTheBodyIsSmallerThanJson) {
  batch::Batch b;
  for (int k = 0; k < 10; ++k) b.keys.push_back("train/metric_" + std::to_string(k));
  std::string json = R"({"seq": 1, "history": [)";
  for (int r = 0; r < 1000; ++r) {
    b.history.push_back({r, 1700000000000 + r, uint32_t(b.cells.size()), 10});
    json += std::string(r ? "," : "") + "{\"step\": " + std::to_string(r) +
            ", \"time\": " + std::to_string(1700000000000 + r) + ", \"values\": {";
    for (uint32_t k = 0; k < 10; ++k) {
      b.cells.push_back({k, 0.1 * r + k});
      json += std::string(k ? ", " : "") + "\"train/metric_" + std::to_string(k) +
              "\": " + std::to_string(0.1 * r + k);
    }
    json += "}}";
  }
  json += "]}";
  const std::string binary = Encode(b);
  // 10 values of 8 bytes plus a flag byte, a step and a time delta per row.
  EXPECT_LT(binary.size(), 1000u * 86 + 300);
  EXPECT_LT(binary.size() * 2, json.size());
  auto d = DecodeBinaryIngestBatch(binary, 1, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->history_rows(), 1000u);
  ASSERT_EQ(d->columns.size(), 10u);
  EXPECT_EQ(d->columns[9].key, "train/metric_9");
  EXPECT_EQ(d->columns[9].rows.size(), 1000u);
  EXPECT_EQ(d->columns[9].values[999], 0.1 * 999 + 9);
}

TEST(DecodeBinaryIngestBatch, EveryTruncationIsAnError) {
  const std::string body = Encode(SampleBatch());
  for (size_t n = 0; n < body.size(); ++n) {
    std::string cut = body.substr(0, n);
    // Re-seal so the checksum passes and the payload's own truncation is what fails.
    std::string sealed = n > batch::kHeaderBytes ? Seal(cut.substr(batch::kHeaderBytes)) : cut;
    auto d = DecodeBinaryIngestBatch(sealed, 1, ApiLimits{});
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
  bad[4] = 1;
  ExpectError(DecodeError(bad), StatusCode::kInvalidArgument, "version 1 is not supported");
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
              "keys[0]: key is empty");
  ExpectError(DecodeError(Seal(Payload({std::string(257, 'k')}, none))),
              StatusCode::kInvalidArgument, "key longer than 256 bytes");
  ExpectError(DecodeError(Seal(Payload({"ok", "\xC0\xAF"}, none))), StatusCode::kInvalidArgument,
              "keys[1]: key is not valid UTF-8");
  ExpectError(DecodeError(Seal(Payload({std::string("a\0b", 3)}, none))),
              StatusCode::kInvalidArgument, "keys[0]: key contains a NUL byte");
  ExpectError(DecodeError(Seal(Payload({"ok", "system/x"}, none))), StatusCode::kInvalidArgument,
              "keys[1]: key 'system/x' starts with \"system/\"");
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  ExpectError(DecodeError(Seal(Payload({"a", "b", "c"}, none)), limits),
              StatusCode::kPayloadTooLarge, "more than 2 distinct keys");
}

TEST(DecodeBinaryIngestBatch, TooManyRowsIsPayloadTooLarge) {
  ApiLimits limits;
  limits.max_rows_per_batch = 2;
  std::string rest = Bytes({2, 0, 2, 1, 0}) + Double(1) + Bytes({2, 2}) + Double(2) +
                     Bytes({1, 0, 2, 1, 0}) + Double(3) + Bytes({0, 0, 0});  // no media
  ExpectError(DecodeError(Seal(Payload({"a"}, rest)), limits), StatusCode::kPayloadTooLarge,
              "more than 2 rows");
  EXPECT_TRUE(DecodeBinaryIngestBatch(Seal(Payload({"a"}, rest)), 1, ApiLimits{}).ok());
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
              "histogram count 7 exceeds what the remaining 0 bytes can hold");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({0, 0, 0, 0, 7})))),
              StatusCode::kInvalidArgument, "media count 7 exceeds what the remaining 0 bytes");
  ExpectError(DecodeError(Seal(Payload({"a"}, Bytes({0, 0, 0, 0, 0, 7})))),
              StatusCode::kInvalidArgument, "1 unexpected bytes after the media rows");
}

batch::MediaRow Media(uint32_t key, uint32_t index, batch::MediaType type, int64_t step) {
  batch::MediaRow m;
  m.step = step;
  m.time_ms = 1700000000000 + step;
  m.key = key;
  m.index = index;
  m.type = type;
  m.sha256 = std::string(63, 'c') + std::to_string(index % 10);
  m.size = 1000 + index;
  m.mime = type == batch::MediaType::kTable ? "application/json" : "image/png";
  m.width = 64;
  m.height = 32;
  m.duration_ms = 0;
  m.caption = "sample " + std::to_string(index) + " \xC3\xA9";
  return m;
}

TEST(DecodeBinaryIngestBatch, MediaRowsRoundTrip) {
  batch::Batch b = SampleBatch();
  b.keys.push_back("samples");  // 5
  b.keys.push_back("preds");    // 6
  b.media = {Media(5, 0, batch::MediaType::kImage, 7), Media(5, 1, batch::MediaType::kImage, 7),
             Media(6, 0, batch::MediaType::kTable, 8)};
  b.media[2].cell_bytes = int64_t{5} << 33;  // a table of media cells: their bytes
  auto d = DecodeBinaryIngestBatch(Encode(b), 3, ApiLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->media.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const batch::MediaRow& want = b.media[i];
    const store::MediaPoint& got = d->media[i];
    EXPECT_EQ(got.key, b.keys[want.key]);
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.time_ms, want.time_ms);
    EXPECT_EQ(got.index, int64_t(want.index));
    EXPECT_EQ(got.type, batch::MediaTypeName(want.type));
    EXPECT_EQ(got.sha256, want.sha256);
    EXPECT_EQ(got.size, want.size);
    EXPECT_EQ(got.mime, want.mime);
    EXPECT_EQ(got.width, want.width);
    EXPECT_EQ(got.height, want.height);
    EXPECT_EQ(got.caption, want.caption);
    EXPECT_EQ(got.cell_bytes, want.cell_bytes);
  }
  EXPECT_EQ(d->points(), 9);  // the scalars are there too
}

TEST(DecodeBinaryIngestBatch, AMediaKeyHasOneTypeInABatch) {
  batch::Batch b = SampleBatch();  // key 0 ("loss") is a scalar of the history rows
  b.media = {Media(0, 0, batch::MediaType::kImage, 1)};
  ExpectError(DecodeError(Encode(b)), StatusCode::kInvalidArgument,
              "media[0]: key 'loss' is logged as a scalar and as image in the same batch");
  b = SampleBatch();
  b.keys.push_back("m");
  b.media = {Media(5, 0, batch::MediaType::kImage, 1), Media(5, 1, batch::MediaType::kAudio, 1)};
  ExpectError(DecodeError(Encode(b)), StatusCode::kInvalidArgument,
              "media[1]: key 'm' is logged as image and as audio in the same batch");
  b = SampleBatch();
  b.keys.push_back("h");
  Histogram h;
  h.lo = 0;
  h.hi = 1;
  h.counts = {1};
  b.histograms = {{.step = 1, .time_ms = 1, .key = 5, .value = h}};
  b.media = {Media(5, 0, batch::MediaType::kVideo, 1)};
  ExpectError(DecodeError(Encode(b)), StatusCode::kInvalidArgument,
              "key 'h' is logged as a histogram and as video");
}

TEST(DecodeBinaryIngestBatch, MalformedMediaRows) {
  const std::string digest(32, char(0xcd));
  auto row = [&](int flags, int type, std::string_view mime, std::string_view caption) {
    return Bytes({0, 0, 0, 0, 1, flags, 2, 0, 0, type, 0}) + digest + Bytes({5}) +
           Bytes({int(mime.size())}) + std::string(mime) + Bytes({1, 1, 0}) +
           Bytes({int(caption.size())}) + std::string(caption);
  };
  EXPECT_TRUE(DecodeBinaryIngestBatch(Seal(Payload({"a"}, row(0, 1, "image/png", "c"))), 1,
                                      ApiLimits{})
                  .ok());
  ExpectError(DecodeError(Seal(Payload({"a"}, row(4, 1, "image/png", "")))),
              StatusCode::kInvalidArgument, "media[0]: unknown flags 0x04");
  ExpectError(DecodeError(Seal(Payload({"a"}, row(0, 9, "image/png", "")))),
              StatusCode::kInvalidArgument, "media[0]: unknown media type 9");
  ExpectError(DecodeError(Seal(Payload({"a"}, row(0, 1, "png", "")))),
              StatusCode::kInvalidArgument, "media[0] (key 'a'): mime: 'png'");
  ExpectError(DecodeError(Seal(Payload({"a"}, row(0, 1, "image/png", "\xFF")))),
              StatusCode::kInvalidArgument, "caption: not valid UTF-8");
  // Flag 1: a table's cell bytes follow the caption; only a table has media cells.
  EXPECT_TRUE(DecodeBinaryIngestBatch(Seal(Payload({"a"}, row(1, 5, "application/json", "") +
                                                               Bytes({40}))),
                                      1, ApiLimits{})
                  .ok());
  ExpectError(DecodeError(Seal(Payload({"a"}, row(1, 1, "image/png", "") + Bytes({40})))),
              StatusCode::kInvalidArgument, "cell_bytes: only a table has media cells");
  ExpectError(DecodeError(Seal(Payload({"a"}, row(1, 5, "application/json", "")))),
              StatusCode::kInvalidArgument, "media[0]");
  const std::string whole = Seal(Payload({"a"}, row(0, 1, "image/png", "cap")));
  for (size_t n = batch::kHeaderBytes + 9; n < whole.size(); ++n) {
    auto d = DecodeBinaryIngestBatch(Seal(whole.substr(batch::kHeaderBytes, n - batch::kHeaderBytes)),
                                     1, ApiLimits{});
    EXPECT_FALSE(d.ok()) << "accepted a media row cut to " << n << " bytes";
  }
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

TEST(DecodeBinaryIngestBatch, SeqHeader) {
  EXPECT_EQ(*ParseBatchSeqHeader("17"), 17);
  EXPECT_EQ(*ParseBatchSeqHeader(" 9223372036854775807 "), INT64_MAX);
  for (const char* bad : {"", "0", "-1", "1x", "9223372036854775808", "99999999999999999999"}) {
    auto r = ParseBatchSeqHeader(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("Cohort-Batch-Seq header"), std::string::npos);
  }
}

TEST(DecodeBinaryIngestBatch, OrderedHeaderNamesAStream) {
  EXPECT_EQ(*ParseBatchOrderedHeader(""), "");  // absent: an unordered batch
  EXPECT_EQ(*ParseBatchOrderedHeader(" \t"), "");
  EXPECT_EQ(*ParseBatchOrderedHeader(" 0f3a-b_c.d "), "0f3a-b_c.d");
  EXPECT_EQ(*ParseBatchOrderedHeader(std::string(64, 'a')), std::string(64, 'a'));
  for (std::string bad : {std::string(65, 'a'), std::string("a b"), std::string("a/b"),
                          std::string("caf\xc3\xa9"), std::string("a\x01")}) {
    auto r = ParseBatchOrderedHeader(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("Cohort-Batch-Ordered header"), std::string::npos);
  }
}

TEST(DecodeBinaryIngestBatch, ContentTypeMatching) {
  EXPECT_TRUE(IsBinaryBatchContentType("application/vnd.cohort.batch"));
  EXPECT_TRUE(IsBinaryBatchContentType("Application/Vnd.Cohort.Batch; v=2"));
  EXPECT_TRUE(IsBinaryBatchContentType(" application/vnd.cohort.batch \t; v=2"));
  EXPECT_FALSE(IsBinaryBatchContentType("application/json"));
  EXPECT_FALSE(IsBinaryBatchContentType(""));
  EXPECT_FALSE(IsBinaryBatchContentType("application/vnd.cohort.batchx"));
}

}  // namespace
}  // namespace cohort::api
