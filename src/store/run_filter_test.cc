#include "store/run_filter.h"

#include <gtest/gtest.h>

#include <limits>

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

TEST(RunFilterTest, ParsesJsonSortKeys) {
  std::vector<std::string> path;
  auto s = ParseRunSort("summary.val.loss", &path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, RunSortField::kSummary);
  EXPECT_EQ(path, (std::vector<std::string>{"val", "loss"}));
  EXPECT_EQ(ParseRunSort("config.lr").value(), RunSortField::kConfig);
  for (const char* bad : {"summary.", "config.a..b", "config.a\"b", "summary.x.", "configx"}) {
    auto r = ParseRunSort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().ToString();
  }
}

TEST(RunFilterTest, JsonCursorRoundTripsEachClass) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const RunJsonSortKey& key :
       {RunJsonSortKey{JsonSortClass::kNumber, 0.1, ""},
        RunJsonSortKey{JsonSortClass::kNumber, -inf, ""},
        RunJsonSortKey{JsonSortClass::kNumber, 1e-320, ""},
        RunJsonSortKey{JsonSortClass::kNaN, 0, ""}, RunJsonSortKey{JsonSortClass::kText, 0, "a:b"},
        RunJsonSortKey{JsonSortClass::kText, 0, ""},
        RunJsonSortKey{JsonSortClass::kMissing, 0, ""}}) {
    RunCursor c{RunSortField::kSummary, false, key, 9, "val.lo:ss"};
    const std::string text = EncodeRunCursor(c);
    auto d = DecodeRunCursorFor(text, RunSortField::kSummary, false, "val.lo:ss");
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const auto& j = std::get<RunJsonSortKey>(d->key);
    EXPECT_EQ(j.cls, key.cls);
    EXPECT_EQ(j.number, key.number);
    EXPECT_EQ(j.text, key.text);
    EXPECT_EQ(d->pk, 9);
    EXPECT_FALSE(DecodeRunCursorFor(text, RunSortField::kSummary, false, "val.lo").ok());
    EXPECT_FALSE(DecodeRunCursorFor(text, RunSortField::kConfig, false, "val.lo:ss").ok());
    EXPECT_FALSE(DecodeRunCursorFor(text, RunSortField::kSummary, true, "val.lo:ss").ok());
  }
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
