#include "store/run_filter.h"

#include <gtest/gtest.h>

namespace cohort::store {
namespace {

TEST(RunFilterTest, ParsesConfigPathIntoSegments) {
  auto p = ParseFilter(Filter{"config.optim.lr", "<", {"0.5"}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->field, FilterField::kConfig);
  EXPECT_EQ(p->path, (std::vector<std::string>{"optim", "lr"}));
  EXPECT_EQ(p->op, FilterOp::kLt);
  ASSERT_EQ(p->values.size(), 1u);
  EXPECT_EQ(p->values[0].number, 0.5);
  EXPECT_EQ(JsonPath(p->path), "$.\"optim\".\"lr\"");
}

TEST(RunFilterTest, JsonValuesReadBooleansAsNumbers) {
  auto p = ParseFilter(Filter{"summary.done", "==", {"true"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->values[0].number, 1.0);
  auto q = ParseFilter(Filter{"config.model", "==", {"resnet"}});
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->values[0].number.has_value());
}

TEST(RunFilterTest, RejectsUnknownFieldNamingIt) {
  auto p = ParseFilter(Filter{"colour", "==", {"red"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("colour"), std::string::npos);
}

TEST(RunFilterTest, RejectsUnknownOpNamingIt) {
  auto p = ParseFilter(Filter{"name", "like", {"x"}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("like"), std::string::npos);
}

TEST(RunFilterTest, RejectsWrongValueCounts) {
  EXPECT_FALSE(ParseFilter(Filter{"name", "==", {}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"name", "==", {"a", "b"}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"group", "in", {}}).ok());
  EXPECT_TRUE(ParseFilter(Filter{"group", "in", {"a", "b"}}).ok());
}

TEST(RunFilterTest, RejectsBadKeyPathsAndStates) {
  EXPECT_FALSE(ParseFilter(Filter{"config.", "==", {"1"}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"config.a..b", "==", {"1"}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"config.a\"b", "==", {"1"}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"state", "in", {"running", "zombie"}}).ok());
  EXPECT_FALSE(ParseFilter(Filter{"tag", ">", {"x"}}).ok());
}

TEST(RunFilterTest, CursorRoundTrips) {
  RunCursor c{RunSortField::kName, false, std::string("a:b|c"), 42};
  auto d = DecodeRunCursor(EncodeRunCursor(c));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->sort, RunSortField::kName);
  EXPECT_FALSE(d->descending);
  EXPECT_EQ(std::get<std::string>(d->key), "a:b|c");
  EXPECT_EQ(d->pk, 42);
  RunCursor i{RunSortField::kCreated, true, int64_t{-17}, 3};
  auto e = DecodeRunCursor(EncodeRunCursor(i));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(std::get<int64_t>(e->key), -17);
}

TEST(RunFilterTest, CursorForAnotherSortIsRejected) {
  std::string text = EncodeRunCursor(RunCursor{RunSortField::kName, true, std::string("x"), 1});
  EXPECT_TRUE(DecodeRunCursorFor(text, RunSortField::kName, true).ok());
  EXPECT_FALSE(DecodeRunCursorFor(text, RunSortField::kName, false).ok());
  EXPECT_FALSE(DecodeRunCursorFor(text, RunSortField::kGroup, true).ok());
}

TEST(RunFilterTest, GarbageCursorIsInvalidArgument) {
  for (const char* bad : {"", "zz", "abc", "31", "3130"}) {
    auto d = DecodeRunCursor(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace cohort::store
