#include "server/api/ingest_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

namespace cohort::api {
namespace {

using store::IngestBatch;
using store::kAssignStep;

// The values of one section by row: key -> value, from the columns.
std::map<uint32_t, std::map<std::string, double>> Cells(const IngestBatch& b, bool system = false) {
  std::map<uint32_t, std::map<std::string, double>> out;
  for (const auto& c : b.columns) {
    if (c.system != system) continue;
    EXPECT_EQ(c.rows.size(), c.values.size());
    for (size_t i = 0; i < c.rows.size(); ++i) {
      EXPECT_TRUE(i == 0 || c.rows[i - 1] < c.rows[i]) << c.key;
      out[c.rows[i]][c.key] = c.values[i];
    }
  }
  return out;
}

Status Error(std::string_view body, const ApiLimits& limits = {}) {
  auto b = DecodeIngestBatch(body, limits);
  EXPECT_FALSE(b.ok()) << body;
  return b.ok() ? Status::Ok() : b.status();
}

void ExpectError(std::string_view body, StatusCode code, std::string_view text,
                 const ApiLimits& limits = {}) {
  Status s = Error(body, limits);
  EXPECT_EQ(s.code(), code) << body << " -> " << s.ToString();
  EXPECT_NE(s.message().find(text), std::string::npos) << body << " -> " << s.ToString();
}

TEST(DecodeIngestBatch, ReadsRowsSystemAndConsoleIntoColumns) {
  auto b = DecodeIngestBatch(R"({"seq": 3,
      "history": [{"step": 7, "time": 10, "values": {"loss": 0.5, "flag": true}},
                  {"time": 11, "values": {"loss": 0.25, "flag": false, "n": 3}}],
      "system": [{"time": 11, "values": {"gpu.0.temp": 60}}],
      "console": [{"time": 12, "stream": "stderr", "text": "oops"}, {"time": 13, "text": "ok"}]})",
                             ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->seq, 3);
  EXPECT_EQ(b->history_step, (std::vector<int64_t>{7, kAssignStep}));
  EXPECT_EQ(b->history_time_ms, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(b->system_time_ms, (std::vector<int64_t>{11}));
  ASSERT_EQ(b->columns.size(), 4u);  // loss, flag, n; system/gpu.0.temp
  EXPECT_EQ(b->points(), 6);
  auto rows = Cells(*b);
  EXPECT_EQ(rows[0], (std::map<std::string, double>{{"loss", 0.5}, {"flag", 1}}));
  EXPECT_EQ(rows[1], (std::map<std::string, double>{{"loss", 0.25}, {"flag", 0}, {"n", 3}}));
  EXPECT_EQ(Cells(*b, true)[0], (std::map<std::string, double>{{"system/gpu.0.temp", 60}}));
  ASSERT_EQ(b->console.size(), 2u);
  EXPECT_EQ(b->console[0].stream, "stderr");
  EXPECT_EQ(b->console[1].stream, "stdout");
  EXPECT_EQ(b->console[1].text, "ok");
}

TEST(DecodeIngestBatch, NonFiniteStringsBecomeDoublesAndMinusZeroKeepsItsSign) {
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": "NaN", "b": "-Infinity", "c": "inf", "z": -0, "p": 0}}]})",
      ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto rows = Cells(*b);
  EXPECT_TRUE(std::isnan(rows[0]["a"]));
  EXPECT_EQ(rows[0]["b"], -INFINITY);
  EXPECT_EQ(rows[0]["c"], INFINITY);
  EXPECT_TRUE(std::signbit(rows[0]["z"]));
  EXPECT_FALSE(std::signbit(rows[0]["p"]));
}

TEST(DecodeIngestBatch, RandomDoublesRoundTripBitForBit) {
  std::mt19937_64 rng(42);
  std::string body = R"({"seq": 1, "history": [)";
  std::vector<double> want;
  for (int r = 0; r < 2000; ++r) {
    if (r) body += ',';
    body += "{\"step\":" + std::to_string(r) + ",\"time\":" + std::to_string(r * 100) + ",\"values\":{";
    for (int k = 0; k < 4; ++k) {
      double d;
      do {
        uint64_t bits = rng();
        std::memcpy(&d, &bits, sizeof d);
      } while (!std::isfinite(d));
      if (k == 1) d = double(float(d / 1e300));  // float32-like
      char buf[64];
      std::snprintf(buf, sizeof buf, k == 2 ? "%.9g" : "%.17g", d);
      want.push_back(std::strtod(buf, nullptr));
      body += (k ? ",\"k" : "\"k") + std::to_string(k) + "\":" + buf;
    }
    body += "}}";
  }
  body += "]}";
  auto b = DecodeIngestBatch(body, ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->columns.size(), 4u);
  for (int r = 0; r < 2000; ++r) {
    for (int k = 0; k < 4; ++k) {
      const double got = b->columns[k].values[r];
      EXPECT_EQ(std::memcmp(&got, &want[r * 4 + k], sizeof got), 0) << r << " " << k;
    }
  }
}

TEST(DecodeIngestBatch, UnusualButValidShapes) {
  // Integral doubles for integers, nulls for absent optional fields, a key repeated in one row
  // (the last value, as any JSON reader keeps), an empty row.
  auto b = DecodeIngestBatch(R"({"seq": 2.0, "history": [
      {"step": null, "time": 1.0, "values": {"a": 1, "a": 2}},
      {"time": 2, "values": {}}],
      "system": null,
      "console": [{"time": 1, "stream": null, "text": "x"}]})",
                             ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->seq, 2);
  EXPECT_EQ(b->history_step, (std::vector<int64_t>{kAssignStep, kAssignStep}));
  EXPECT_EQ(b->history_time_ms, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Cells(*b)[0], (std::map<std::string, double>{{"a", 2}}));
  EXPECT_EQ(b->console[0].stream, "stdout");
}

// Every error names the field and the problem; limits are 413.
TEST(DecodeIngestBatch, ErrorsNameTheField) {
  const StatusCode bad = StatusCode::kInvalidArgument;
  ExpectError(R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1}},
                                         {"step": 1, "time": 1, "values": {"bad": "text"}}]})",
              bad, "history[1].values.bad: expected a number (or \"NaN\"");
  ExpectError(R"({"seq": 0})", bad, "seq: must be > 0");
  ExpectError(R"({"history": []})", bad, "seq: required");
  ExpectError(R"({"seq": "1"})", bad, "seq: expected an integer");
  ExpectError(R"({"seq": 1, "seq": 2})", bad, "seq: given more than once");
  ExpectError(R"({"seq": 1, "extra": 1})", bad, "extra: unknown field");
  ExpectError(R"({"seq": 1, "history": {}})", bad, "history: expected an array");
  ExpectError(R"({"seq": 1, "history": [3]})", bad, "history[0]: expected an object");
  ExpectError(R"({"seq": 1, "history": [{"step": -1, "time": 1, "values": {"a": 1}}]})", bad,
              "history[0].step: must be >= 0");
  ExpectError(R"({"seq": 1, "history": [{"step": 1.5, "time": 1, "values": {}}]})", bad,
              "history[0].step: expected an integer");
  ExpectError(R"({"seq": 1, "history": [{"values": {"a": 1}}]})", bad, "history[0].time: required");
  ExpectError(R"({"seq": 1, "history": [{"time": 1}]})", bad, "history[0].values: expected an object");
  ExpectError(R"({"seq": 1, "system": [{"time": 1, "values": [1]}]})", bad,
              "system[0].values: expected an object");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1}, "x": 2}]})", bad,
              "history[0].x: unknown field");
  ExpectError(R"({"seq": 1, "system": [{"time": 1, "step": 2, "values": {}}]})", bad,
              "system[0].step: unknown field");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": null}}]})", bad,
              "history[0].values.a: expected a number");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": {"b": 1}}}]})", bad,
              "history[0].values.a: expected a number");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"": 1}}]})", bad,
              "history[0].values: key is empty");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a\u0000b": 1}}]})", bad,
              "history[0].values: key contains a NUL byte");
  ExpectError(R"({"seq": 1, "system": [{"time": 1, "values": {"system/gpu": 1}}]})", bad,
              "system[0].values.system/gpu: key starts with \"system/\"");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {")" + std::string(300, 'k') +
                  R"(": 1}}]})",
              bad, "history[0].values: key longer than 256 bytes");
  ExpectError(R"({"seq": 1, "console": [{"time": 1, "stream": "x", "text": "t"}]})", bad,
              "console[0].stream: expected stdout or stderr");
  ExpectError(R"({"seq": 1, "console": [{"time": 1, "stream": 1, "text": "t"}]})", bad,
              "console[0].stream: expected a string");
  ExpectError(R"({"seq": 1, "console": [{"time": 1}]})", bad, "console[0].text: required");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1e999}}]})", bad,
              "out of the range of a double");
  ExpectError(R"({"seq": 1, "history": [)", bad, "body: malformed JSON");
  ExpectError(R"({"seq": 1} trailing)", bad, "body: malformed JSON");
  ExpectError(R"([1, 2])", bad, "body: expected a JSON object");
  ExpectError(std::string(100, '[') + std::string(100, ']'), bad, "expected a JSON object");
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": "\xff"}}]})", bad,
              "body: malformed JSON");
  ApiLimits small;
  small.max_console_line_bytes = 2;
  ExpectError(R"({"seq": 1, "console": [{"time": 1, "text": "abc"}]})", bad,
              "console[0].text: longer than 2 bytes", small);
}

TEST(DecodeIngestBatch, TooManyDistinctKeysOrRowsIsPayloadTooLarge) {
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  limits.max_rows_per_batch = 3;
  ExpectError(R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1, "b": 2}},
                                         {"step": 1, "time": 1, "values": {"a": 1, "c": 2}}]})",
              StatusCode::kPayloadTooLarge, "more than 2 distinct keys (--max-keys-per-batch)",
              limits);
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {}}, {"time": 1, "values": {}}],
                            "console": [{"time": 1, "text": "a"}, {"time": 1, "text": "b"}]})",
              StatusCode::kPayloadTooLarge, "more than 3 rows", limits);
  // Repeated keys count once, across sections too.
  auto b = DecodeIngestBatch(
      R"({"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1, "b": 2}},
                                 {"step": 1, "time": 1, "values": {"b": 1, "a": 2}}],
                     "system": [{"time": 1, "values": {"a": 3}}]})",
      limits);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->columns.size(), 3u);  // a, b, system/a
}

}  // namespace
}  // namespace cohort::api
