#include "server/api/ingest_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "core/batch_format.h"
#include "server/api/ingest_binary_decode.h"

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

TEST(DecodeIngestBatch, ReadsHistogramAndMediaRows) {
  const std::string sha(64, 'a');
  auto b = DecodeIngestBatch(R"({"seq": 4,
      "history": [{"step": 3, "time": 10, "values": {"loss": 1}}],
      "histograms": [{"key": "grad/w", "step": 3, "time": 10, "lo": -1, "hi": 1.5,
                      "counts": [1, 0, 2.5]},
                     {"key": "act", "step": 4, "time": 11, "edges": [0, 1, 10],
                      "counts": [7, 8], "hi": null}],
      "media": [{"key": "samples", "step": 3, "time": 12, "index": 1, "type": "image",
                 "sha256": ")" + sha + R"(", "size": 5123, "mime": "image/png",
                 "width": 64, "height": 32, "caption": "a cat \u00e9"},
                {"key": "preds", "step": 3, "time": 13, "type": "table",
                 "sha256": ")" + sha + R"(", "size": 10, "mime": "application/json",
                 "duration_ms": null, "cell_bytes": 70000}]})",
                             ApiLimits{});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->histograms.size(), 2u);
  const store::HistogramPoint& u = b->histograms[0];
  EXPECT_EQ(u.key, "grad/w");
  EXPECT_EQ(u.step, 3);
  EXPECT_EQ(u.time_ms, 10);
  EXPECT_TRUE(u.value.uniform());
  EXPECT_EQ(u.value.lo, -1);
  EXPECT_EQ(u.value.hi, 1.5);
  EXPECT_EQ(u.value.counts, (std::vector<double>{1, 0, 2.5}));
  const store::HistogramPoint& e = b->histograms[1];
  EXPECT_EQ(e.key, "act");
  EXPECT_EQ(e.step, 4);
  EXPECT_EQ(e.value.edges, (std::vector<double>{0, 1, 10}));
  EXPECT_EQ(e.value.counts, (std::vector<double>{7, 8}));
  ASSERT_EQ(b->media.size(), 2u);
  const store::MediaPoint& m = b->media[0];
  EXPECT_EQ(m.key, "samples");
  EXPECT_EQ(m.step, 3);
  EXPECT_EQ(m.time_ms, 12);
  EXPECT_EQ(m.index, 1);
  EXPECT_EQ(m.type, "image");
  EXPECT_EQ(m.sha256, sha);
  EXPECT_EQ(m.size, 5123);
  EXPECT_EQ(m.mime, "image/png");
  EXPECT_EQ(m.width, 64);
  EXPECT_EQ(m.height, 32);
  EXPECT_EQ(m.caption, "a cat \xC3\xA9");
  // Optional fields absent (or null) are 0 / empty.
  const store::MediaPoint& t = b->media[1];
  EXPECT_EQ(t.type, "table");
  EXPECT_EQ(t.index, 0);
  EXPECT_EQ(t.width, 0);
  EXPECT_EQ(t.duration_ms, 0);
  EXPECT_EQ(t.caption, "");
  EXPECT_EQ(t.cell_bytes, 70000);
  EXPECT_EQ(m.cell_bytes, 0);
  EXPECT_EQ(b->points(), 1);  // the scalar only
}

TEST(DecodeIngestBatch, HistogramAndMediaErrorsNameTheField) {
  const StatusCode bad = StatusCode::kInvalidArgument;
  const std::string sha(64, 'a');
  auto h = [](std::string_view row) {
    return R"({"seq": 1, "histograms": [{"key": "h", "step": 0, "time": 1, "lo": 0, "hi": 1,
               "counts": [1]}, )" + std::string(row) + "]}";
  };
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1, "x"]})"),
              bad, "histograms[1].counts[1]: expected a number");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": 3})"), bad,
              "histograms[1].counts: expected an array of numbers");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": "a", "hi": 1, "counts": [1]})"),
              bad, "histograms[1].lo: expected a number");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1], "x": 1})"),
              bad, "histograms[1].x: unknown field");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "values": {}})"), bad,
              "histograms[1].values: unknown field");
  ExpectError(h(R"({"key": "h", "time": 1, "lo": 0, "hi": 1, "counts": [1]})"), bad,
              "histograms[1].step: required");
  ExpectError(h(R"({"key": "h", "step": -1, "time": 1, "lo": 0, "hi": 1, "counts": [1]})"), bad,
              "histograms[1].step: must be >= 0");
  ExpectError(h(R"({"step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1]})"), bad,
              "histograms[1].key: required");
  ExpectError(h(R"({"key": "h", "step": 1, "lo": 0, "hi": 1, "counts": [1]})"), bad,
              "histograms[1].time: required");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1})"), bad,
              "histograms[1].counts: required");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "counts": [1]})"), bad,
              "histograms[1].hi: required (or edges)");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "edges": [0, 1], "counts": [1]})"),
              bad, "histograms[1].edges: given with lo/hi");
  // The shared checks (ingest_checks.h), in the binary decoder's words.
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "edges": [0, 1], "counts": [1, 2]})"), bad,
              "histograms[1] (key 'h'): 2 counts but 2 edges (need 3)");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "edges": [0, "Infinity"], "counts": [1]})"),
              bad, "histograms[1] (key 'h'): edge 1 is not finite");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "edges": [1, 0], "counts": [1]})"), bad,
              "histograms[1] (key 'h'): edges must be strictly ascending");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [-1]})"), bad,
              "histograms[1] (key 'h'): count 0 is -1 (counts must be finite and >= 0)");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": ["NaN"]})"),
              bad, "histograms[1] (key 'h'): count 0 is nan");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 1, "hi": 1, "counts": [1]})"), bad,
              "histograms[1] (key 'h'): the range [1, 1] is empty");
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": []})"), bad,
              "histograms[1] (key 'h'): a histogram needs at least one bin");
  std::string many = "[0";
  for (int i = 0; i < 600; ++i) many += ",1";
  many += "]";
  ExpectError(h(R"({"key": "h", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": )" + many + "}"),
              bad, "histograms[1].counts: more than 512 (a histogram has at most 512 bins)");
  ExpectError(h(R"({"key": "", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1]})"), bad,
              "histograms[1].key: key is empty");
  ExpectError(h(R"({"key": "system/x", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1]})"),
              bad, "histograms[1].key: key 'system/x' starts with \"system/\"");

  auto m = [&](std::string_view fields) {
    return R"({"seq": 1, "media": [{"key": "img", "step": 0, "time": 1, "type": "image",
               "sha256": ")" + sha + R"(", "size": 3, "mime": "image/png")" + std::string(fields) +
           "}]}";
  };
  EXPECT_TRUE(DecodeIngestBatch(m(""), ApiLimits{}).ok());
  ExpectError(m(R"(, "type": "image")"), bad, "media[0].type: given more than once");
  ExpectError(m(R"(, "lo": 1)"), bad, "media[0].lo: unknown field");
  ExpectError(m(R"(, "index": "1")"), bad, "media[0].index: expected an integer");
  ExpectError(m(R"(, "index": 4294967296)"), bad, "media[0].index: must be 0 to 2^32-1");
  ExpectError(m(R"(, "caption": 3)"), bad, "media[0].caption: expected a string");
  ExpectError(m(R"(, "width": -1)"), bad,
              "media[0] (key 'img'): width, height and duration_ms must be >= 0");
  ExpectError(m(R"(, "cell_bytes": 10)"), bad,
              "media[0] (key 'img'): cell_bytes: only a table has media cells");
  ExpectError(m(R"(, "cell_bytes": -1)"), bad,
              "media[0] (key 'img'): cell_bytes: 0 to 1125899906842624");
  ExpectError(R"({"seq": 1, "media": [{"key": "t", "step": 0, "time": 1, "type": "table",
              "sha256": ")" + sha + R"(", "size": 3, "mime": "application/json",
              "cell_bytes": 9223372036854775807}]})",
              bad, "media[0] (key 't'): cell_bytes: 0 to 1125899906842624");
  ExpectError(R"({"seq": 1, "media": [{"key": "img", "step": 0, "time": 1, "type": "gif",
              "sha256": ")" + sha + R"(", "size": 3, "mime": "image/gif"}]})",
              bad, "media[0].type: 'gif' is not image, audio, video, html or table");
  ExpectError(R"({"seq": 1, "media": [{"key": "img", "step": 0, "time": 1, "type": "image",
              "sha256": "ABC", "size": 3, "mime": "image/png"}]})",
              bad, "media[0] (key 'img'): sha256: expected 64 lowercase hex digits");
  ExpectError(R"({"seq": 1, "media": [{"key": "img", "step": 0, "time": 1, "type": "image",
              "sha256": ")" + sha + R"(", "size": -3, "mime": "image/png"}]})",
              bad, "media[0] (key 'img'): size: must be >= 0");
  ExpectError(R"({"seq": 1, "media": [{"key": "img", "step": 0, "time": 1, "type": "image",
              "sha256": ")" + sha + R"(", "size": 3, "mime": "png"}]})",
              bad, "media[0] (key 'img'): mime: 'png' is not a plain type/subtype");
}

TEST(DecodeIngestBatch, MediaRowsNeedTheirFields) {
  const std::string sha(64, 'a');
  const std::map<std::string, std::string> fields = {
      {"key", R"("img")"},   {"step", "0"},          {"time", "1"},
      {"type", R"("image")"}, {"sha256", "\"" + sha + "\""}, {"size", "3"},
      {"mime", R"("image/png")"}};
  for (const auto& [missing, unused] : fields) {
    std::string row;
    for (const auto& [name, value] : fields) {
      if (name == missing) continue;
      row += (row.empty() ? "\"" : ", \"") + name + "\": " + value;
    }
    ExpectError(R"({"seq": 1, "media": [{)" + row + "}]}", StatusCode::kInvalidArgument,
                "media[0]." + missing + ": required");
  }
}

TEST(DecodeIngestBatch, AKeyHasOneTypeInABatchAsInTheBinaryBatch) {
  const std::string sha(64, 'b');
  const std::string image = R"({"key": "m", "step": 0, "time": 1, "type": "image", "sha256": ")" +
                            sha + R"(", "size": 1, "mime": "image/png"})";
  const std::string audio = R"({"key": "m", "step": 0, "time": 1, "type": "audio", "sha256": ")" +
                            sha + R"(", "size": 1, "mime": "audio/wav", "index": 1})";
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"h": 1}}],
                 "histograms": [{"key": "h", "step": 0, "time": 1, "lo": 0, "hi": 1, "counts": [1]}]})",
              StatusCode::kInvalidArgument,
              "histograms[0]: key 'h' is logged as a scalar and as a histogram in the same batch");
  ExpectError(R"({"seq": 1, "media": [)" + image + ", " + audio + "]}",
              StatusCode::kInvalidArgument,
              "media[1]: key 'm' is logged as image and as audio in the same batch");
  ExpectError(R"({"seq": 1, "media": [)" + image + R"(],
                 "histograms": [{"key": "m", "step": 0, "time": 1, "lo": 0, "hi": 1, "counts": [1]}]})",
              StatusCode::kInvalidArgument, "key 'm' is logged as a histogram and as image");
  // A system key of the same name is another key ("system/m").
  auto ok = DecodeIngestBatch(R"({"seq": 1, "system": [{"time": 1, "values": {"m": 1}}],
                                  "media": [)" + image + "]}",
                              ApiLimits{});
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST(DecodeIngestBatch, HistogramAndMediaKeysAndRowsCountTowardTheLimits) {
  ApiLimits limits;
  limits.max_keys_per_batch = 2;
  limits.max_rows_per_batch = 3;
  const std::string hist = R"("step": 0, "time": 1, "lo": 0, "hi": 1, "counts": [1]})";
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1, "b": 1}}],
                 "histograms": [{"key": "c", )" + hist + "]}",
              StatusCode::kPayloadTooLarge, "more than 2 distinct keys", limits);
  ExpectError(R"({"seq": 1, "history": [{"time": 1, "values": {"a": 1}}],
                 "histograms": [{"key": "b", )" + hist + R"(, {"key": "b", )" + hist +
                  R"(, {"key": "b", "step": 1, "time": 1, "lo": 0, "hi": 1, "counts": [1]}]})",
              StatusCode::kPayloadTooLarge, "more than 3 rows", limits);
  auto b = DecodeIngestBatch(R"({"seq": 1, "histograms": [{"key": "b", )" + hist +
                                 R"(, {"key": "b", "step": 1, "time": 2, "lo": 0, "hi": 1, "counts": [2]}]})",
                             limits);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->histograms.size(), 2u);
}

// The same histograms and media as a JSON body and as a binary batch decode to the same batch.
TEST(DecodeIngestBatch, HistogramsAndMediaYieldWhatTheBinaryBatchYields) {
  const std::string sha = "0123456789abcdef" + std::string(48, 'e');
  const std::string json = R"({"seq": 5,
      "history": [{"step": 2, "time": 1700000000000, "values": {"loss": 0.5}}],
      "histograms": [{"key": "grad/w", "step": 2, "time": 1700000000001, "lo": -0.5, "hi": 0.5,
                      "counts": [3, 10, 0.25]},
                     {"key": "act", "step": 2, "time": 1700000000002, "edges": [0, 1, 4],
                      "counts": [1, 2]}],
      "media": [{"key": "samples", "step": 2, "time": 1700000000003, "index": 1, "type": "image",
                 "sha256": ")" + sha + R"(", "size": 5123, "mime": "image/png", "width": 64,
                 "height": 48, "caption": "x \u00e9"},
                {"key": "clip", "step": 3, "time": 1700000000004, "type": "audio",
                 "sha256": ")" + sha + R"(", "size": 9, "mime": "audio/wav",
                 "duration_ms": 1500}]})";
  batch::Batch b;
  b.keys = {"loss", "grad/w", "act", "samples", "clip"};
  b.cells = {{0, 0.5}};
  b.history = {{2, 1700000000000, 0, 1}};
  Histogram uniform;
  uniform.lo = -0.5;
  uniform.hi = 0.5;
  uniform.counts = {3, 10, 0.25};
  Histogram explicit_edges;
  explicit_edges.edges = {0, 1, 4};
  explicit_edges.counts = {1, 2};
  b.histograms = {{.step = 2, .time_ms = 1700000000001, .key = 1, .value = uniform},
                  {.step = 2, .time_ms = 1700000000002, .key = 2, .value = explicit_edges}};
  batch::MediaRow img;
  img.step = 2;
  img.time_ms = 1700000000003;
  img.key = 3;
  img.index = 1;
  img.type = batch::MediaType::kImage;
  img.sha256 = sha;
  img.size = 5123;
  img.mime = "image/png";
  img.width = 64;
  img.height = 48;
  img.caption = "x \xC3\xA9";
  batch::MediaRow clip;
  clip.step = 3;
  clip.time_ms = 1700000000004;
  clip.key = 4;
  clip.type = batch::MediaType::kAudio;
  clip.sha256 = sha;
  clip.size = 9;
  clip.mime = "audio/wav";
  clip.duration_ms = 1500;
  b.media = {img, clip};
  std::string encoded;
  batch::Encode(b, &encoded);
  auto from_json = DecodeIngestBatch(json, ApiLimits{});
  auto from_binary = DecodeBinaryIngestBatch(encoded, 5, ApiLimits{});
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  ASSERT_TRUE(from_binary.ok()) << from_binary.status().ToString();
  EXPECT_EQ(Cells(*from_json), Cells(*from_binary));
  ASSERT_EQ(from_json->histograms.size(), 2u);
  ASSERT_EQ(from_binary->histograms.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const store::HistogramPoint& j = from_json->histograms[i];
    const store::HistogramPoint& k = from_binary->histograms[i];
    EXPECT_EQ(j.key, k.key);
    EXPECT_EQ(j.step, k.step);
    EXPECT_EQ(j.time_ms, k.time_ms);
    EXPECT_EQ(j.value.lo, k.value.lo);
    EXPECT_EQ(j.value.hi, k.value.hi);
    EXPECT_EQ(j.value.edges, k.value.edges);
    EXPECT_EQ(j.value.counts, k.value.counts);
  }
  ASSERT_EQ(from_json->media.size(), 2u);
  ASSERT_EQ(from_binary->media.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const store::MediaPoint& j = from_json->media[i];
    const store::MediaPoint& k = from_binary->media[i];
    EXPECT_EQ(std::tie(j.key, j.step, j.time_ms, j.index, j.type, j.sha256, j.size, j.mime,
                       j.width, j.height, j.duration_ms, j.caption),
              std::tie(k.key, k.step, k.time_ms, k.index, k.type, k.sha256, k.size, k.mime,
                       k.width, k.height, k.duration_ms, k.caption))
        << i;
  }
}

}  // namespace
}  // namespace cohort::api
