#include "agent/batch_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/json.h"

namespace cohort::agent {
namespace {

TEST(BatchJsonTest, WritesHistorySystemAndConsole) {
  LogBatch b;
  b.keys = {"loss", "cpu"};
  b.cells = {{0, 0.25}, {1, 12.5}};
  b.history = {{.step = 100, .time_ms = 1700000000123, .begin = 0, .count = 1}};
  b.system = {{.step = 0, .time_ms = 1700000000000, .begin = 1, .count = 1}};
  b.console = {{1700000000200, true, "warning: \"x\"\n"}};
  std::string out;
  BatchJsonStats stats = AppendBatchJson(b, 17, &out);
  EXPECT_EQ(stats.points, 2);
  EXPECT_EQ(out,
            R"({"seq":17,"history":[{"step":100,"time":1700000000123,"values":{"loss":0.25}}],)"
            R"("system":[{"time":1700000000000,"values":{"cpu":12.5}}],)"
            R"("console":[{"time":1700000000200,"stream":"stderr","text":"warning: \"x\"\n"}]})");
  EXPECT_TRUE(json::Parse(out).ok());
}

TEST(BatchJsonTest, NonFiniteValuesBecomeStrings) {
  LogBatch b;
  b.keys = {"a", "b", "c"};
  b.cells = {{0, std::nan("")},
             {1, std::numeric_limits<double>::infinity()},
             {2, -std::numeric_limits<double>::infinity()}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 3}};
  std::string out;
  AppendBatchJson(b, 1, &out);
  EXPECT_NE(out.find(R"("a":"NaN","b":"Infinity","c":"-Infinity")"), std::string::npos) << out;
}

TEST(BatchJsonTest, RepeatedKeyInRowKeepsLastValue) {
  LogBatch b;
  b.keys = {"x"};
  b.cells = {{0, 1}, {0, 2}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 2}};
  std::string out;
  BatchJsonStats stats = AppendBatchJson(b, 1, &out);
  EXPECT_EQ(stats.points, 1);
  EXPECT_NE(out.find(R"("values":{"x":2})"), std::string::npos) << out;
}

TEST(BatchJsonTest, BadKeysAreLeftOut) {
  LogBatch b;
  b.keys = {"", std::string(300, 'k'), "ok"};
  b.cells = {{0, 1}, {1, 2}, {2, 3}};
  b.history = {{.step = 0, .time_ms = 1, .begin = 0, .count = 3}};
  std::string out;
  BatchJsonStats stats = AppendBatchJson(b, 1, &out);
  EXPECT_EQ(stats.points, 1);
  EXPECT_EQ(stats.dropped_keys, 2);
  EXPECT_NE(out.find(R"("values":{"ok":3})"), std::string::npos) << out;
}

TEST(BatchJsonTest, InvalidUtf8IsReplaced) {
  std::string out;
  AppendJsonString("a\xff" "b\xe2\x82" "c\xc3\xa9", &out);
  // Each byte that starts no valid sequence becomes one U+FFFD.
  EXPECT_EQ(out, "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD" "c\xc3\xa9\"");
  EXPECT_TRUE(json::Parse(out).ok());
}

TEST(BatchJsonTest, ControlCharactersAreEscaped) {
  std::string out;
  AppendJsonString(std::string("\x01\t", 2), &out);
  EXPECT_EQ(out, R"("\u0001\t")");
}

TEST(BatchJsonTest, OverlongConsoleLineIsCutOnCharacterBoundary) {
  LogBatch b;
  b.console = {{1, false, std::string(kMaxConsoleLineBytes - 1, 'a') + "\xc3\xa9xyz"}};
  std::string out;
  AppendBatchJson(b, 1, &out);
  auto v = json::Parse(out);
  ASSERT_TRUE(v.ok());
  auto text = v->at("console").at(0).at("text").as_string();
  EXPECT_EQ(text.size(), kMaxConsoleLineBytes - 1);
}

TEST(BatchJsonTest, DoublesRoundTripExactly) {
  std::string out;
  AppendJsonDouble(0.1, &out);
  EXPECT_EQ(out, "0.1");
  out.clear();
  AppendJsonDouble(1e300, &out);
  EXPECT_EQ(std::stod(out), 1e300);
}

}  // namespace
}  // namespace cohort::agent
