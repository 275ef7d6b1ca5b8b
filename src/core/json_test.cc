#include "core/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cohort::json {
namespace {

TEST(JsonParse, RejectsInvalidUtf8) {
  auto r = Parse("{\"a\":\"\xff\xfe\"}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(JsonParse, RejectsNestingBeyondLimit) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto r = Parse(deep, {.max_depth = 10});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nesting"), std::string::npos);
}

TEST(JsonDouble, NonFiniteRoundTripsThroughStrings) {
  EXPECT_EQ(Serialize(FromDouble(std::numeric_limits<double>::infinity())), "\"Infinity\"");
  EXPECT_TRUE(std::isnan(*ToDouble(FromDouble(std::nan("")))));
  EXPECT_EQ(*ToDouble(FromDouble(-std::numeric_limits<double>::infinity())),
            -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(ToDouble(bj::value("hello")).has_value());
}

TEST(FieldReader, NamesTheFieldInTheError) {
  auto v = Parse(R"({"name": 3})").value();
  FieldReader r(v.as_object(), "run");
  (void)r.OptString("name");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "run.name: expected a string");
}

TEST(FieldReader, RejectsUnknownField) {
  auto v = Parse(R"({"name": "a", "bogus": 1})").value();
  FieldReader r(v.as_object(), "");
  r.RejectUnknown({"name"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bogus: unknown field");
}

namespace cohort::json {
namespace {

TEST(JsonParse, DoublesAreCorrectlyRounded) {
  // Boost.JSON 1.81's own conversion reads this one unit in the last place off.
  auto v = Parse("[0.09090909090909091, 1e-320, 1.7976931348623157e308, -0.0]");
  ASSERT_TRUE(v.ok());
  const auto& a = v->as_array();
  EXPECT_EQ(a[0].as_double(), 1.0 / 11.0);
  EXPECT_EQ(a[1].as_double(), 1e-320);
  EXPECT_EQ(a[2].as_double(), 1.7976931348623157e308);
  EXPECT_TRUE(std::signbit(a[3].as_double()));
}

TEST(JsonParse, BuildsNestedObjectsWithLastDuplicateKeyWinning) {
  auto v = Parse(R"({"a": {"b": [1, "x", null, true]}, "k": 1, "k": 2})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Serialize(*v), R"({"a":{"b":[1,"x",null,true]},"k":2})");
}

TEST(JsonParse, RejectsTrailingGarbage) { EXPECT_FALSE(Parse("{} x").ok()); }

}  // namespace
}  // namespace cohort::json

// Found by tests/fuzz/ingest_fuzzer: "1e999" became an infinity that serialized as the invalid
// JSON token Infinity (tests/fuzz/regressions/ingest/number_overflows_double.json).
TEST(JsonParse, RejectsNumbersBeyondTheRangeOfADouble) {
  for (const char* text : {"1e999", "[-1e400]", "{\"v\": 31348623157e+308}"}) {
    auto v = Parse(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_NE(v.status().message().find("out of the range of a double"), std::string::npos)
        << v.status().message();
  }
  auto tiny = Parse("[1e-400, 1.7976931348623157e308, 5e-324]");
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  EXPECT_EQ(tiny->as_array()[0].as_double(), 0.0);
  EXPECT_EQ(tiny->as_array()[1].as_double(), 1.7976931348623157e308);
}

}  // namespace
}  // namespace cohort::json
