#include "cli/history_fetch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cohort::cli {
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

TEST(HistoryFetch, DecodesColumnsKeepingNaNPayloads) {
  const uint64_t nan = 0x7ff0000000000123ull, neg_zero = 0x8000000000000000ull;
  std::string body = Body(
      R"({"series":[{"key":"a","writer":"w","points":2,"more":true},)"
      R"({"key":"b","writer":"","points":0,"more":false}]})",
      {{3, 5}, {1000, 2000}, {nan, neg_zero}});
  auto got = DecodeHistoryColumns(body);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  const HistorySeries& a = (*got)[0];
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

TEST(HistoryFetch, RefusesDamagedBodies) {
  std::string body =
      Body(R"({"series":[{"key":"a","writer":"w","points":1,"more":false}]})", {{1}, {2}, {3}});
  std::string bad = body;
  bad.back() ^= 1;
  EXPECT_EQ(DecodeHistoryColumns(bad).status().code(), StatusCode::kCorruption);
  EXPECT_NE(DecodeHistoryColumns(bad).status().message().find("checksum"), std::string::npos);
  EXPECT_EQ(DecodeHistoryColumns(body.substr(0, 10)).status().code(), StatusCode::kCorruption);
  // Says one point more than it carries.
  std::string short_body =
      Body(R"({"series":[{"key":"a","writer":"w","points":2,"more":false}]})", {{1}, {2}, {3}});
  EXPECT_NE(DecodeHistoryColumns(short_body).status().message().find("cut short"),
            std::string::npos);
  std::string v2 = body;
  v2[4] = 2;
  EXPECT_NE(DecodeHistoryColumns(v2).status().message().find("version"), std::string::npos);
}

TEST(HistoryFetch, ReadsTheJsonAnswerToo) {
  auto answer = json::Parse(
      R"({"series":[{"key":"a","writer":"w","more":true,"points":[[1,10,0.5],[2,20,"NaN"]]}]})");
  ASSERT_TRUE(answer.ok());
  auto got = ParseHistoryJson(*answer);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*got)[0].values[0], 0.5);
  EXPECT_TRUE(std::isnan((*got)[0].values[1]));
  EXPECT_TRUE((*got)[0].more);
  auto bad = json::Parse(R"({"series":[{"key":"a","points":[[1,10]]}]})");
  EXPECT_FALSE(ParseHistoryJson(*bad).ok());
}

}  // namespace
}  // namespace cohort::cli
