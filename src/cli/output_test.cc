#include "cli/output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace cohort::cli {
namespace {

std::string Printed(const Table& t, const char* indent = "") {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  t.Print(f, indent);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(TableTest, PadsColumnsToTheWidestCellAndTrimsTheLastOne) {
  Table t({"ID", "STATE", "NAME"});
  t.AddRow({"a", "running", "x"});
  t.AddRow({"bbbb", "ok", ""});
  EXPECT_EQ(Printed(t),
            "ID    STATE    NAME\n"
            "a     running  x\n"
            "bbbb  ok\n");
}

TEST(TableTest, ColourEscapesAndUtf8DoNotCountTowardsTheWidth) {
  Table t({"S", "N"});
  t.AddRow({"failed", "é"}, {ColorState("failed", true), ""});
  t.AddRow({"ok", "x"});
  EXPECT_EQ(Printed(t, "  "),
            "  S       N\n"
            "  \x1b[31mfailed\x1b[0m  é\n"
            "  ok      x\n");
}

TEST(ColorStateTest, ColoursKnownStatesOnlyWhenAsked) {
  EXPECT_EQ(ColorState("finished", true), "\x1b[32mfinished\x1b[0m");
  EXPECT_EQ(ColorState("running", true), "\x1b[36mrunning\x1b[0m");
  EXPECT_EQ(ColorState("finished", false), "finished");
  EXPECT_EQ(ColorState("weird", true), "weird");
}

TEST(UseColorTest, NeverAndAlwaysWinOverTheTerminal) {
  std::FILE* f = std::tmpfile();
  EXPECT_FALSE(UseColor(f, "auto"));  // a file is no terminal
  EXPECT_TRUE(UseColor(f, "always"));
  EXPECT_FALSE(UseColor(f, "never"));
  std::fclose(f);
}

TEST(NaturalLessTest, ComparesNumbersInLabelsAsNumbers) {
  EXPECT_TRUE(NaturalLess("rank_2", "rank_10"));
  EXPECT_FALSE(NaturalLess("rank_10", "rank_2"));
  EXPECT_TRUE(NaturalLess("rank_1", "rank_1x"));
  EXPECT_FALSE(NaturalLess("rank_3", "rank_3"));
  EXPECT_TRUE(NaturalLess("a", "b"));
  EXPECT_TRUE(NaturalLess("node1-7", "node2-1"));
}

TEST(FormatDoubleTest, ShortestRoundTripAndNonFiniteNames) {
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(1299), "1299");
  EXPECT_EQ(FormatDouble(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(std::stod(FormatDouble(1.0 / 7)), 1.0 / 7);
  EXPECT_EQ(FormatDouble(std::nan("")), "NaN");
  EXPECT_EQ(FormatDouble(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(FormatDouble(-std::numeric_limits<double>::infinity()), "-Infinity");
}

TEST(CompactJsonTest, WritesShortestNumbersAndEscapesStrings) {
  boost::json::value v = {{"lr", 0.1}, {"n", 3}, {"s", "a\"b"}, {"l", {1.5, nullptr, true}}};
  std::string text = CompactJson(v);
  EXPECT_NE(text.find("\"lr\":0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"n\":3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"s\":\"a\\\"b\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"l\":[1.5,null,true]"), std::string::npos) << text;
}

TEST(FormatDurationTest, PicksTheTwoLargestUnits) {
  EXPECT_EQ(FormatDuration(850), "850ms");
  EXPECT_EQ(FormatDuration(42'000), "42s");
  EXPECT_EQ(FormatDuration(187'000), "3m07s");
  EXPECT_EQ(FormatDuration(7'500'000), "2h05m");
  EXPECT_EQ(FormatDuration(3 * 86'400'000 + 4 * 3'600'000), "3d04h");
}

TEST(FormatTimeTest, UtcSecondsOrADashForZero) {
  EXPECT_EQ(FormatTime(1'700'000'000'123), "2023-11-14 22:13:20");
  EXPECT_EQ(FormatTime(0), "-");
}

}  // namespace
}  // namespace cohort::cli
