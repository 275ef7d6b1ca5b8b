#include "cli/history_fetch.h"

#include <gtest/gtest.h>

#include <cmath>
#include "core/json.h"

namespace cohort::cli {
namespace {

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
