#include "client/line_splitter.h"

#include <gtest/gtest.h>

namespace cohort::client {
namespace {

std::vector<std::string> Split(std::initializer_list<std::string_view> chunks) {
  LineSplitter s;
  std::vector<std::string> out;
  for (auto c : chunks) s.Feed(c, 1000, &out);
  s.FlushAll(&out);
  return out;
}

TEST(LineSplitterTest, SplitsOnNewlinesAcrossChunks) {
  EXPECT_EQ(Split({"ab", "c\nde", "f\n\nx"}),
            (std::vector<std::string>{"abc", "def", "", "x"}));
}

TEST(LineSplitterTest, CarriageReturnRewritesTheLine) {
  EXPECT_EQ(Split({"epoch 1:  10%\repoch 1:  50%", "\repoch 1: 100%\n", "done\n"}),
            (std::vector<std::string>{"epoch 1: 100%", "done"}));
}

TEST(LineSplitterTest, CrLfIsAPlainLineEnd) {
  EXPECT_EQ(Split({"a\r\nb\r", "\n"}), (std::vector<std::string>{"a", "b"}));
}

TEST(LineSplitterTest, StalePartialLineIsEmittedOnceUntilItChanges) {
  LineSplitter s({.max_line_bytes = 1000, .partial_flush_ms = 100});
  std::vector<std::string> out;
  s.Feed("Password: ", 0, &out);
  s.FlushIfStale(50, &out);
  EXPECT_TRUE(out.empty());
  s.FlushIfStale(150, &out);
  EXPECT_EQ(out, (std::vector<std::string>{"Password: "}));
  s.FlushIfStale(400, &out);  // unchanged: not again
  EXPECT_EQ(out.size(), 1u);
  s.Feed("\n", 500, &out);  // the newline ends the same content: not again
  EXPECT_EQ(out.size(), 1u);
  s.Feed("\r 10%", 600, &out);
  s.Feed("\r 20%", 800, &out);
  s.FlushIfStale(800, &out);
  EXPECT_EQ(out.back(), " 20%");
  s.Feed("\r100%\n", 900, &out);
  EXPECT_EQ(out.back(), "100%");
  EXPECT_EQ(out.size(), 3u);
}

TEST(LineSplitterTest, OverlongLinesAreCut) {
  LineSplitter s({.max_line_bytes = 4, .partial_flush_ms = 100});
  std::vector<std::string> out;
  s.Feed("abcdefghij\n", 0, &out);
  EXPECT_EQ(out, (std::vector<std::string>{"abcd", "efgh", "ij"}));
}

}  // namespace
}  // namespace cohort::client
