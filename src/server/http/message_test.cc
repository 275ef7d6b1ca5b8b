#include "server/http/message.h"

#include <gtest/gtest.h>

namespace cohort::http {
namespace {

TEST(HttpResponseTest, ErrorBodyIsEscapedJson) {
  HttpResponse r = HttpResponse::Error(400, "bad", "say \"hi\"\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"error":{"code":"bad","message":"say \"hi\"\n"}})");
}

TEST(HttpRequestTest, AccessorsReturnFirstMatchOrFallback) {
  HttpRequest req;
  req.headers = {{"x-a", "1"}, {"x-a", "2"}};
  req.query = {{"q", "v"}};
  req.path_params = {{"id", "7"}};
  EXPECT_EQ(req.Header("x-a"), "1");
  EXPECT_EQ(req.Header("x-b"), "");
  EXPECT_EQ(req.QueryParam("q"), "v");
  EXPECT_EQ(req.QueryParam("r", "dflt"), "dflt");
  EXPECT_TRUE(req.HasQueryParam("q"));
  EXPECT_FALSE(req.HasQueryParam("r"));
  EXPECT_EQ(req.PathParam("id"), "7");
  EXPECT_EQ(req.PathParam("nope"), "");
}

TEST(PercentDecodeTest, DecodesEscapesAndKeepsMalformedOnes) {
  EXPECT_EQ(PercentDecode("a%20b%2Fc"), "a b/c");
  EXPECT_EQ(PercentDecode("a+b"), "a+b");
  EXPECT_EQ(PercentDecode("a+b", /*plus_as_space=*/true), "a b");
  EXPECT_EQ(PercentDecode("100%"), "100%");
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
}

}  // namespace
}  // namespace cohort::http
