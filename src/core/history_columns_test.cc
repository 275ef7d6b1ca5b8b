#include "core/history_columns.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::history_columns {
namespace {

// A columnar body built by hand from docs/formats.md "History columns".
std::string Body(const std::string& header, const std::vector<std::vector<uint64_t>>& columns) {
  std::string out = "CHCL";
  coding::PutFixed32(&out, 1);
  coding::PutFixed32(&out, uint32_t(header.size()));
  coding::PutFixed32(&out, 0);
  out += header;
  out.append((8 - header.size() % 8) % 8, '\0');
  for (const auto& col : columns) {
    for (uint64_t v : col) coding::PutFixed64(&out, v);
  }
  std::string crc;
  coding::PutFixed32(&crc, crc32c::Value(out.data() + 16, out.size() - 16));
  std::memcpy(out.data() + 12, crc.data(), 4);
  return out;
}

TEST(HistoryColumnsDecode, KeepsNaNPayloadsAndNegativeZero) {
  const uint64_t nan = 0x7ff0000000000123ull, neg_zero = 0x8000000000000000ull;
  std::string body = Body(R"({"series":[{"key":"a","writer":"w","points":2,"more":true},)"
                          R"({"key":"b","writer":"","points":0,"more":false}]})",
                          {{3, 5}, {1000, 2000}, {nan, neg_zero}});
  auto decoded = Decode(body);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  const std::vector<ColumnSeries>* got = &decoded->series;
  ASSERT_EQ(got->size(), 2u);
  const ColumnSeries& a = (*got)[0];
  EXPECT_EQ(a.key, "a");
  EXPECT_EQ(a.writer, "w");
  EXPECT_TRUE(a.more);
  EXPECT_EQ(a.steps, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(a.times, (std::vector<int64_t>{1000, 2000}));
  EXPECT_EQ(coding::DoubleBits(a.values[0]), nan);
  EXPECT_EQ(coding::DoubleBits(a.values[1]), neg_zero);
  EXPECT_TRUE((*got)[1].steps.empty());
  EXPECT_FALSE((*got)[1].more);
}

TEST(HistoryColumnsDecode, RefusesDamagedBodiesNamingTheProblem) {
  std::string body =
      Body(R"({"series":[{"key":"a","writer":"w","points":1,"more":false}]})", {{1}, {2}, {3}});
  std::string bad = body;
  bad.back() ^= 1;
  EXPECT_EQ(Decode(bad).status().code(), StatusCode::kCorruption);
  EXPECT_NE(Decode(bad).status().message().find("checksum"), std::string::npos);
  EXPECT_EQ(Decode(body.substr(0, 10)).status().code(), StatusCode::kCorruption);
  // Says one point more than it carries.
  std::string short_body =
      Body(R"({"series":[{"key":"a","writer":"w","points":2,"more":false}]})", {{1}, {2}, {3}});
  EXPECT_NE(Decode(short_body).status().message().find("cut short"), std::string::npos);
  std::string v2 = body;
  v2[4] = 2;
  EXPECT_NE(Decode(v2).status().message().find("version"), std::string::npos);
}

TEST(HistoryColumnsDecode, KeepsTheHeaderAndRefusesHeadersThatLie) {
  const std::string header = R"({"series":[],"warnings":[{"key":"k"}]})";
  auto decoded = Decode(Body(header, {}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->header_json, header);
  EXPECT_TRUE(decoded->series.empty());
  for (std::string bad : {R"({"series":[{"key":1,"writer":"w","points":0,"more":false}]})",
                          R"({"series":[{"key":"k","writer":"w","points":-1,"more":false}]})",
                          R"({"other":[]})", "not json"}) {
    EXPECT_EQ(Decode(Body(bad, {})).status().code(), StatusCode::kCorruption) << bad;
  }
  // Bytes after the last column.
  EXPECT_NE(Decode(Body(R"({"series":[]})", {{7}})).status().message().find("bytes after"),
            std::string::npos);
}

}  // namespace
}  // namespace cohort::history_columns
