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

// What is not a history answer is refused naming what is wrong, never read as an empty or a
// partial series.
TEST(HistoryFetch, AnswersOfAnotherShapeAreRefusedNamingTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([])", "no series in the answer"},
      {R"({"runs":[]})", "no series in the answer"},
      {R"({"series":{}})", "no series in the answer"},
      {R"({"series":[{"key":"a"}]})", "a series without points"},
      {R"({"series":[{"key":"a","points":{}}]})", "a series without points"},
      {R"({"series":[{"key":"a","points":[7]}]})", "a point is not [step, time, value]"},
      {R"({"series":[{"key":"a","points":[["1",10,0.5]]}]})", "a point is not [step, time, value]"},
      {R"({"series":[{"key":"a","points":[[1,"t",0.5]]}]})", "a point is not [step, time, value]"},
      {R"({"series":[{"key":"a","points":[[1,10,"x"]]}]})", "a point is not [step, time, value]"},
      {R"({"series":[{"key":"a","points":[[1,10,0.5]]},{"key":"b"}]})", "a series without points"},
  };
  for (const auto& [text, why] : cases) {
    auto answer = json::Parse(text);
    ASSERT_TRUE(answer.ok()) << text;
    auto got = ParseHistoryJson(*answer);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), StatusCode::kInternal) << text;
    EXPECT_NE(got.status().message().find(why), std::string::npos)
        << text << ": " << got.status().message();
  }
  // Infinities and an empty series are answers.
  auto ok = json::Parse(R"({"series":[{"key":"a","writer":"w","points":[[0,1,"-Infinity"]]},)"
                        R"({"key":"b","writer":"w","points":[]}]})");
  ASSERT_TRUE(ok.ok());
  auto got = ParseHistoryJson(*ok);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_TRUE(std::isinf((*got)[0].values[0]) && (*got)[0].values[0] < 0);
  EXPECT_FALSE((*got)[0].more);
  EXPECT_TRUE((*got)[1].steps.empty());
}

}  // namespace
}  // namespace cohort::cli
