#include "server/api/history_columns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::api {
namespace {

store::SeriesData Series(std::string key, std::string writer, std::vector<series::Point> pts,
                         bool more) {
  store::SeriesData s;
  s.key = std::move(key);
  s.writer = std::move(writer);
  s.points = std::move(pts);
  s.more = more;
  return s;
}

uint64_t Bits(double d) { return coding::DoubleBits(d); }

TEST(HistoryColumns, RoundTripKeepsEveryBitOfEveryValue) {
  const double nan_payload = coding::BitsDouble(0x7ff8000000abcdefULL);
  const double neg_nan = coding::BitsDouble(0xfff0000000000001ULL);  // signalling, sign set
  std::vector<series::Point> a = {{0, 1000, 1.5},
                                  {1, 1001, -0.0},
                                  {2, 1002, std::numeric_limits<double>::infinity()},
                                  {3, 1003, -std::numeric_limits<double>::infinity()},
                                  {4, 1004, nan_payload},
                                  {5, 1005, neg_nan},
                                  {-7, INT64_MIN, std::numeric_limits<double>::denorm_min()},
                                  {INT64_MAX, INT64_MAX, 0.1}};
  std::vector<store::SeriesData> in = {Series("loss", "w1", a, true),
                                       Series("acc/top-1 \"x\"", "", {}, false),
                                       Series("lr", "w\xc3\xa9", {{9, 9, 3.0}}, false)};
  std::string body = EncodeHistoryColumns(in, "");
  ASSERT_EQ(body.substr(0, 4), "CHCL");
  // Columns start 8-aligned after the header and take 24 bytes a point.
  EXPECT_EQ((body.size() - history_columns::kPreamble) % 8, 0u);
  auto out = history_columns::Decode(body);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->series.size(), 3u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out->series[i].key, in[i].key);
    EXPECT_EQ(out->series[i].writer, in[i].writer);
    EXPECT_EQ(out->series[i].more, in[i].more);
    ASSERT_EQ(out->series[i].steps.size(), in[i].points.size());
    for (size_t j = 0; j < in[i].points.size(); ++j) {
      EXPECT_EQ(out->series[i].steps[j], in[i].points[j].step);
      EXPECT_EQ(out->series[i].times[j], in[i].points[j].time_ms);
      EXPECT_EQ(Bits(out->series[i].values[j]), Bits(in[i].points[j].value)) << j;
    }
  }
  EXPECT_TRUE(std::signbit(out->series[0].values[1]));
  EXPECT_EQ(out->header_json.find("warnings"), std::string::npos);
}

TEST(HistoryColumns, LayoutIsTheDocumentedOne) {
  std::string body = EncodeHistoryColumns({Series("k", "w", {{3, 4, 2.0}}, false)}, "");
  EXPECT_EQ(coding::DecodeFixed32(body.data() + 4), 1u);  // version
  const size_t header_len = coding::DecodeFixed32(body.data() + 8);
  EXPECT_EQ(body.substr(16, header_len),
            R"({"series":[{"key":"k","writer":"w","points":1,"more":false}]})");
  const size_t cols = 16 + (header_len + 7) / 8 * 8;
  ASSERT_EQ(body.size(), cols + 24);
  EXPECT_EQ(coding::DecodeFixed64(body.data() + cols), 3u);
  EXPECT_EQ(coding::DecodeFixed64(body.data() + cols + 8), 4u);
  EXPECT_EQ(coding::DecodeFixed64(body.data() + cols + 16), Bits(2.0));
}

TEST(HistoryColumns, WarningsGoIntoTheHeader) {
  std::string body = EncodeHistoryColumns({}, R"([{"key":"k","message":"damaged"}])");
  auto out = history_columns::Decode(body);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->header_json, R"({"series":[],"warnings":[{"key":"k","message":"damaged"}]})");
}

TEST(HistoryColumns, DamageIsDetected) {
  std::string body =
      EncodeHistoryColumns({Series("k", "w", {{1, 2, 3.0}, {2, 3, 4.0}}, false)}, "");
  for (size_t at : {size_t(16), body.size() - 1, body.size() - 20}) {
    std::string bad = body;
    bad[at] ^= 0x01;
    EXPECT_FALSE(history_columns::Decode(bad).ok()) << at;
  }
  EXPECT_FALSE(history_columns::Decode(body.substr(0, body.size() - 8)).ok());
  std::string v2 = body;
  v2[4] = 2;
  EXPECT_FALSE(history_columns::Decode(v2).ok());
}

// A body with a good checksum whose header lies is refused, not trusted.
TEST(HistoryColumns, BadHeadersAreRefused) {
  for (std::string header : {R"({"series":[{"key":1,"writer":"w","points":0,"more":false}]})",
                             R"({"series":[{"key":"k","writer":"w","points":-1,"more":false}]})",
                             R"({"series":[{"key":"k","writer":"w","points":9,"more":false}]})",
                             R"({"other":[]})", "not json"}) {
    std::string body = "CHCL";
    coding::PutFixed32(&body, 1);
    coding::PutFixed32(&body, uint32_t(header.size()));
    coding::PutFixed32(&body, 0);
    body += header;
    body.append((8 - header.size() % 8) % 8, '\0');
    body.append(24, '\0');  // one point's worth, for the header that claims 9
    const uint32_t crc = crc32c::Value(body.data() + 16, body.size() - 16);
    std::string c;
    coding::PutFixed32(&c, crc);
    body.replace(12, 4, c);
    EXPECT_FALSE(history_columns::Decode(body).ok()) << header;
  }
}

TEST(HistoryColumns, AcceptChoosesJsonUnlessColumnsAreNamed) {
  auto fmt = [](std::string_view accept, bool bucketed = false) {
    return NegotiateHistoryFormat(accept, bucketed);
  };
  EXPECT_EQ(*fmt(""), HistoryFormat::kJson);
  EXPECT_EQ(*fmt("*/*"), HistoryFormat::kJson);
  EXPECT_EQ(*fmt("application/json"), HistoryFormat::kJson);
  EXPECT_EQ(*fmt("text/html, application/xhtml+xml, */*;q=0.8"), HistoryFormat::kJson);
  EXPECT_EQ(*fmt("application/vnd.cohort.columns"), HistoryFormat::kColumns);
  EXPECT_EQ(*fmt("Application/Vnd.Cohort.Columns; version=1"), HistoryFormat::kColumns);
  EXPECT_EQ(*fmt("application/vnd.cohort.columns, application/json;q=0.5"),
            HistoryFormat::kColumns);
  EXPECT_EQ(*fmt("application/vnd.cohort.columns;q=0.5, application/json"), HistoryFormat::kJson);
  EXPECT_EQ(*fmt("application/vnd.cohort.columns;q=0, */*"), HistoryFormat::kJson);
  // Bucketed reads answer JSON when it is acceptable at all.
  EXPECT_EQ(*fmt("application/vnd.cohort.columns, application/json;q=0.1", true),
            HistoryFormat::kJson);
}

TEST(HistoryColumns, AcceptErrorsNameTheProblem) {
  auto bucketed = NegotiateHistoryFormat("application/vnd.cohort.columns", true);
  ASSERT_FALSE(bucketed.ok());
  EXPECT_NE(bucketed.status().message().find("raw reads only"), std::string::npos);
  auto other = NegotiateHistoryFormat("text/csv", false);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("'text/csv' names no type"), std::string::npos);
  auto version = NegotiateHistoryFormat("application/vnd.cohort.columns; version=2", false);
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find("version 2"), std::string::npos);
  auto q = NegotiateHistoryFormat("application/json;q=abc", false);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("q=abc"), std::string::npos);
  EXPECT_FALSE(NegotiateHistoryFormat("application/json;q=0", false).ok());
}

}  // namespace
}  // namespace cohort::api
