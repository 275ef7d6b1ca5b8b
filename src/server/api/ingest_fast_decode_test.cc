#include "server/api/ingest_fast_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/api/ingest_decode.h"
#include "store/ingest_batch_rows_for_test.h"

namespace cohort::api {
namespace {

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

void ExpectSameValues(const std::vector<std::pair<std::string, double>>& a,
                      const std::vector<std::pair<std::string, double>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    if (std::isnan(a[i].second)) {
      EXPECT_TRUE(std::isnan(b[i].second));
    } else {
      EXPECT_EQ(Bits(a[i].second), Bits(b[i].second)) << a[i].first;
    }
  }
}

void ExpectSameRows(const std::vector<store::RowForTest>& a,
                    const std::vector<store::RowForTest>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].time_ms, b[i].time_ms);
    ExpectSameValues(a[i].values, b[i].values);
  }
}

void ExpectSameBatch(const store::IngestBatch& a, const store::IngestBatch& b) {
  EXPECT_EQ(a.seq, b.seq);
  ExpectSameRows(store::HistoryRowsOf(a), store::HistoryRowsOf(b));
  ExpectSameRows(store::SystemRowsOf(a), store::SystemRowsOf(b));
  ASSERT_EQ(a.console.size(), b.console.size());
  for (size_t i = 0; i < a.console.size(); ++i) {
    EXPECT_EQ(a.console[i].time_ms, b.console[i].time_ms);
    EXPECT_EQ(a.console[i].stream, b.console[i].stream);
    EXPECT_EQ(a.console[i].text, b.console[i].text);
  }
}

// The fast path either declines or agrees exactly with the tree decoder; and the public decoder
// always answers as the tree decoder does.
void ExpectAgreement(const std::string& body, const ApiLimits& limits, bool fast_expected) {
  SCOPED_TRACE(body.substr(0, 300));
  auto fast = FastDecodeIngestBatch(body, limits);
  auto tree = DecodeIngestBatchWithTree(body, limits);
  auto both = DecodeIngestBatch(body, limits);
  EXPECT_EQ(fast.has_value(), fast_expected);
  ASSERT_EQ(tree.ok(), both.ok());
  if (!tree.ok()) {
    EXPECT_FALSE(fast.has_value())
        << "fast path accepted what the tree decoder rejects: " << tree.status().ToString();
    EXPECT_EQ(tree.status().code(), both.status().code());
    EXPECT_EQ(tree.status().message(), both.status().message());
    return;
  }
  if (fast) ExpectSameBatch(*fast, *tree);
  ExpectSameBatch(*both, *tree);
}

TEST(FastDecodeIngestBatch, CommonBatchTakesTheFastPathAndMatchesTheTreeDecoder) {
  ExpectAgreement(R"({"seq": 3,
      "history": [{"step": 7, "time": 10, "values": {"loss": 0.5, "flag": true, "n": 3}},
                  {"time": 11, "values": {"loss": "NaN", "flag": false, "n": -4}}],
      "system": [{"time": 11, "values": {"gpu.0.temp": 60, "cpu": 12.5}}],
      "console": [{"time": 12, "stream": "stderr", "text": "oops \u00e9\n"},
                  {"time": 13, "text": "plain"}]})",
                  ApiLimits{}, /*fast_expected=*/true);
}

TEST(FastDecodeIngestBatch, RandomDoublesRoundTripBitForBit) {
  std::mt19937_64 rng(42);
  std::string body = R"({"seq": 1, "history": [)";
  for (int r = 0; r < 2000; ++r) {
    if (r) body += ',';
    body +=
        "{\"step\":" + std::to_string(r) + ",\"time\":" + std::to_string(r * 100) + ",\"values\":{";
    for (int k = 0; k < 4; ++k) {
      double d;
      do {
        uint64_t bits = rng();
        std::memcpy(&d, &bits, sizeof d);
      } while (!std::isfinite(d));
      if (k == 1) d = double(float(d / 1e300));  // float32-like
      char buf[64];
      std::snprintf(buf, sizeof buf, k == 2 ? "%.9g" : "%.17g", d);
      body += (k ? ",\"k" : "\"k") + std::to_string(k) + "\":" + buf;
    }
    body += "}}";
  }
  body += "]}";
  ExpectAgreement(body, ApiLimits{}, true);
}

TEST(FastDecodeIngestBatch, UnusualButValidShapesFallBackToTheTreeDecoder) {
  // Each is valid; the fast path declines and the tree decoder answers.
  for (const char* body : {
           R"({"seq": 1, "history": [{"time": 1.0, "values": {"a": 1}}]})",  // double time
           R"({"seq": 1, "history": [{"step": null, "time": 1, "values": {"a": 1}}]})",
           R"({"seq": 1, "history": null})",
           R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1, "a": 2}}]})",  // repeated key
           R"({"seq": 1, "seq": 2})",
           R"({"seq": 1, "console": [{"time": 1, "stream": null, "text": "x"}]})",
       }) {
    ExpectAgreement(body, ApiLimits{}, false);
  }
}

TEST(FastDecodeIngestBatch, InvalidBatchesAreLeftToTheTreeDecoderErrors) {
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  limits.max_rows_per_batch = 3;
  limits.max_key_bytes = 8;
  for (
      const char* body : {
          R"({"seq": 0, "history": []})",
          R"({"history": []})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"bad": "text"}}]})",
          R"({"seq": 1, "history": [{"step": -1, "time": 1, "values": {"a": 1}}]})",
          R"({"seq": 1, "history": [{"values": {"a": 1}}]})",
          R"({"seq": 1, "history": [{"time": 1}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1, "b": 2, "c": 3}}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1}}, {"time": 2, "values": {"b": 1}},
                                     {"time": 3, "values": {"c": 1}}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {}}, {"time": 1, "values": {}},
                                     {"time": 1, "values": {}}, {"time": 1, "values": {}}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"": 1}}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"much_too_long": 1}}]})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1e999}}]})",
          R"({"seq": 1, "console": [{"time": 1, "stream": "stdlog", "text": "x"}]})",
          R"({"seq": 1, "console": [{"time": 1}]})",
          R"({"seq": 1, "extra": 1})",
          R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1}, "x": 2}]})",
          R"({"seq": 1, "history": [)",
          R"([1, 2])",
          R"({"seq": 1} trailing)",
      }) {
    ExpectAgreement(body, limits, false);
  }
}

}  // namespace
}  // namespace cohort::api
