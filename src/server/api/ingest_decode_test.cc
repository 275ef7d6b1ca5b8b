#include "server/api/ingest_decode.h"

#include <gtest/gtest.h>

#include <cmath>

#include "store/ingest_batch_rows_for_test.h"

namespace cohort::api {
namespace {

TEST(DecodeIngestBatch, ReadsRowsSystemAndConsole) {
  auto b = DecodeIngestBatch(R"({"seq": 3,
      "history": [{"step": 7, "time": 10, "values": {"loss": 0.5, "flag": true}}],
      "system": [{"time": 11, "values": {"gpu.0.temp": 60}}],
      "console": [{"time": 12, "stream": "stderr", "text": "oops"}]})",
                             ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->seq, 3);
  ASSERT_EQ(store::HistoryRowsOf(*b).size(), 1u);
  EXPECT_EQ(store::HistoryRowsOf(*b)[0].step, 7);
  EXPECT_EQ(store::HistoryRowsOf(*b)[0].values[1].second, 1.0);
  EXPECT_EQ(store::SystemRowsOf(*b)[0].values[0].first, "gpu.0.temp");
  EXPECT_EQ(b->console[0].stream, "stderr");
}

TEST(DecodeIngestBatch, MissingStepMeansServerAssigned) {
  auto b = DecodeIngestBatch(R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1}}]})",
                             ApiLimits{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(store::HistoryRowsOf(*b)[0].step, -1);
}

TEST(DecodeIngestBatch, NonFiniteStringsBecomeDoubles) {
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": "NaN", "b": "-Infinity"}}]})",
      ApiLimits{});
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(std::isnan(store::HistoryRowsOf(*b)[0].values[0].second));
  EXPECT_EQ(store::HistoryRowsOf(*b)[0].values[1].second, -INFINITY);
}

TEST(DecodeIngestBatch, ErrorNamesRowAndKey) {
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1}},
                                 {"step": 1, "time": 1, "values": {"bad": "text"}}]})",
      ApiLimits{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("history[1].values.bad"), std::string::npos);
}

TEST(DecodeIngestBatch, TooManyDistinctKeysIsPayloadTooLarge) {
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1, "b": 2}},
                                 {"step": 1, "time": 1, "values": {"a": 1, "c": 2}}]})",
      limits);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kPayloadTooLarge);
}

TEST(DecodeIngestBatch, RepeatedKeysDoNotCountTwice) {
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1, "b": 2}},
                                 {"step": 1, "time": 1, "values": {"a": 1, "b": 2}}]})",
      limits);
  EXPECT_TRUE(b.ok());
}

TEST(DecodeIngestBatch, ZeroSeqIsRejected) {
  auto b = DecodeIngestBatch(R"({"seq": 0})", ApiLimits{});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("seq"), std::string::npos);
}

TEST(DecodeIngestBatch, BadStreamIsRejected) {
  auto b = DecodeIngestBatch(R"({"seq": 1, "console": [{"time": 1, "stream": "x", "text": "t"}]})",
                             ApiLimits{});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("console[0].stream"), std::string::npos);
}

TEST(DecodeIngestBatch, OverlongKeyIsRejected) {
  std::string key(300, 'k');
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {")" + key + R"(": 1}}]})",
      ApiLimits{});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("longer than 256"), std::string::npos);
}

}  // namespace
}  // namespace cohort::api
