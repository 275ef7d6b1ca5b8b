#include "core/batch_format.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::batch {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(char(b));
  return s;
}

std::string Bits(double d) {
  std::string s;
  coding::PutFixed64(&s, coding::DoubleBits(d));
  return s;
}

// The payload after the 12-byte header; checks the header on the way.
std::string Payload(const std::string& encoded) {
  EXPECT_TRUE(CheckHeader(encoded).ok()) << CheckHeader(encoded).ToString();
  return encoded.substr(kHeaderBytes);
}

TEST(BatchEncode, LayoutOfASmallBatch) {
  Batch b;
  b.keys = {"a", "b"};
  b.cells = {{0, 1.5}, {1, -0.0}, {0, 2.5}, {1, 3}, {0, 4}};
  b.history = {{.step = 7, .time_ms = 100, .begin = 0, .count = 2},
               {.step = 8, .time_ms = 99, .begin = 2, .count = 2}};
  b.system = {{.step = 0, .time_ms = 5, .begin = 4, .count = 1}};
  b.console = {{.time_ms = 3, .is_stderr = true, .text = "hi"}};
  std::string out;
  EncodeStats stats = Encode(b, &out);
  EXPECT_EQ(stats.points, 5);
  EXPECT_EQ(stats.dropped_keys, 0);
  ASSERT_EQ(out.substr(0, 8), std::string("CBAT\x04\0\0\0", 8));
  const std::string want =
      Bytes({2, 1, 'a', 1, 'b'}) +                              // key table
      Bytes({2}) +                                              // 2 history rows
      Bytes({kRowHasStep, 7, 200, 1, 2, 0, 1}) + Bits(1.5) + Bits(-0.0) +  // zz(100) = 200
      Bytes({kRowHasStep | kRowSameKeys, 8, 1}) + Bits(2.5) + Bits(3) +    // zz(-1) = 1
      Bytes({1, 0, 10, 1, 0}) + Bits(4) +                       // 1 system row, zz(5) = 10
      Bytes({1, 6, 1, 2, 'h', 'i'}) +                           // console: zz(3), stderr, "hi"
      Bytes({0}) +                                              // no histograms
      Bytes({0});                                               // no media
  EXPECT_EQ(Payload(out), want);
  EXPECT_EQ(coding::DecodeFixed32(out.data() + 8), crc32c::Value(want));
}

TEST(BatchEncode, LayoutOfHistograms) {
  Batch b;
  b.keys = {"h", "", "g"};
  Histogram uniform;
  uniform.lo = -1;
  uniform.hi = 1;
  uniform.counts = {3, 4};
  Histogram edges;
  edges.edges = {0, 1, 5};
  edges.counts = {0.5, 2};
  Histogram invalid;
  invalid.lo = 1;
  invalid.hi = 0;
  invalid.counts = {1};
  b.histograms = {{.step = 4, .time_ms = 10, .key = 0, .value = uniform},
                  {.step = 5, .time_ms = 9, .key = 2, .value = edges},
                  {.step = 6, .time_ms = 9, .key = 1, .value = uniform},   // invalid key
                  {.step = 6, .time_ms = 9, .key = 0, .value = invalid},   // empty range
                  {.step = -1, .time_ms = 9, .key = 0, .value = uniform}}; // no step
  std::string out;
  EncodeStats stats = Encode(b, &out);
  EXPECT_EQ(stats.histograms, 2);
  EXPECT_EQ(stats.dropped_histograms, 3);
  const std::string want =
      Bytes({2, 1, 'h', 1, 'g'}) + Bytes({0, 0, 0}) +  // keys; no rows, system rows, lines
      Bytes({2}) +                                     // 2 histograms
      Bytes({kHistogramHasStep, 4, 20, 0, 2}) + Bits(-1) + Bits(1) + Bits(3) + Bits(4) +
      Bytes({kHistogramHasStep | kHistogramEdges, 5, 1, 1, 2}) + Bits(0) + Bits(1) + Bits(5) +
      Bits(0.5) + Bits(2) + Bytes({0});                // no media
  EXPECT_EQ(Payload(out), want);
}

TEST(BatchEncode, LayoutOfMediaRows) {
  Batch b;
  b.keys = {"img", "", "tab"};
  MediaRow image;
  image.step = 3;
  image.time_ms = 10;
  image.key = 0;
  image.index = 1;
  image.type = MediaType::kImage;
  image.sha256 = std::string(62, 'a') + "0f";
  image.size = 300;
  image.mime = "image/png";
  image.width = 2;
  image.height = 1;
  image.caption = "x";
  MediaRow table = image;
  table.key = 2;
  table.time_ms = 9;
  table.type = MediaType::kTable;
  table.mime = "application/json";
  table.caption = "";
  MediaRow bad_key = image;
  bad_key.key = 1;
  MediaRow bad_digest = image;
  bad_digest.sha256 = "ABC";
  MediaRow bad_mime = image;
  bad_mime.mime = "image/png; charset=x";
  MediaRow bad_caption = image;
  bad_caption.caption = "\xC0";
  b.media = {image, table, bad_key, bad_digest, bad_mime, bad_caption};
  std::string out;
  EncodeStats stats = Encode(b, &out);
  EXPECT_EQ(stats.media, 2);
  EXPECT_EQ(stats.dropped_media, 4);
  const std::string digest = std::string(31, char(0xaa)) + "\x0f";
  const std::string want =
      Bytes({2, 3, 'i', 'm', 'g', 3, 't', 'a', 'b'}) + Bytes({0, 0, 0, 0}) +  // keys; no rows
      Bytes({2}) +                                                       // 2 media rows
      Bytes({0, 3, 20, 0, 1, 1}) + digest + Bytes({0xac, 0x02, 9}) + "image/png" +
      Bytes({2, 1, 0, 1, 'x'}) +
      Bytes({0, 3, 1, 1, 5, 1}) + digest + Bytes({0xac, 0x02, 16}) + "application/json" +
      Bytes({2, 1, 0, 0});
  EXPECT_EQ(Payload(out), want);
  EXPECT_EQ(MediaTypeName(MediaType::kAudio), "audio");
  EXPECT_EQ(ParseMediaType("table"), MediaType::kTable);
  EXPECT_FALSE(ParseMediaType("histogram").has_value());
  EXPECT_NE(InvalidMediaReason(bad_digest).find("sha256"), std::string::npos);
}

TEST(BatchEncode, InvalidKeysAreLeftOutRepeatsMergedAndTheLastValueOfARowWins) {
  Batch b;
  b.keys = {"", "system/x", "a", "a", std::string("n\0l", 3), "ok"};
  b.cells = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}};
  b.history = {{.step = -1, .time_ms = 0, .begin = 0, .count = 6}};
  std::string out;
  EncodeStats stats = Encode(b, &out);
  EXPECT_EQ(stats.dropped_keys, 3);
  EXPECT_EQ(stats.points, 2);
  // Keys "a" and "ok"; one row without a step (the server assigns it), "a" = 4 (its last value).
  EXPECT_EQ(Payload(out), Bytes({2, 1, 'a', 2, 'o', 'k', 1, 0, 0, 2, 0, 1}) + Bits(4) + Bits(6) +
                              Bytes({0, 0, 0, 0}));  // no system rows, lines, histograms, media
}

TEST(BatchEncode, ConsoleTextIsMadeValidAndCutToTheLineLimit) {
  Batch b;
  b.console = {{.time_ms = 0, .is_stderr = false, .text = "x\xff"},
               {.time_ms = 0, .is_stderr = false, .text = std::string(70000, 'y')}};
  std::string out;
  Encode(b, &out);
  const std::string p = Payload(out);
  EXPECT_NE(p.find("x\xEF\xBF\xBD"), std::string::npos);
  EXPECT_LT(out.size(), 65536u + 64);
}

TEST(BatchCheckHeader, NamesTheProblem) {
  Batch b;
  b.keys = {"a"};
  b.cells = {{0, 1}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 1}};
  std::string good;
  Encode(b, &good);
  ASSERT_TRUE(CheckHeader(good).ok());
  EXPECT_EQ(Version(good), std::optional<uint8_t>(4));
  EXPECT_EQ(Version("{\"seq\": 1}"), std::nullopt);
  auto message = [](std::string_view bytes) { return CheckHeader(bytes).message(); };
  EXPECT_NE(message(good.substr(0, 7)).find("truncated header (7 of 12 bytes)"), std::string::npos);
  EXPECT_NE(message("XBAT" + good.substr(4)).find("does not start with"), std::string::npos);
  std::string bad = good;
  bad[4] = 3;  // the version before media rows
  EXPECT_EQ(CheckHeader(bad).code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(message(bad).find("version 3 is not supported"), std::string::npos);
  bad = good;
  bad[6] = 1;
  EXPECT_NE(message(bad).find("header flags"), std::string::npos);
  bad = good;
  bad.back() ^= 1;
  EXPECT_NE(message(bad).find("bad checksum"), std::string::npos);
  EXPECT_NE(message(good.substr(0, good.size() - 1)).find("bad checksum"), std::string::npos);
}

}  // namespace
}  // namespace cohort::batch
