#include "server/api/auth.h"

#include <gtest/gtest.h>

namespace cohort::api {
namespace {

http::HttpRequest WithAuth(std::string value) {
  http::HttpRequest req;
  req.headers.emplace_back("authorization", std::move(value));
  return req;
}

TEST(ExtractApiKey, ReadsBearer) {
  EXPECT_EQ(ExtractApiKey(WithAuth("Bearer ck_abc")), "ck_abc");
}

TEST(ExtractApiKey, ReadsBasicWithApiUser) {
  // base64("api:ck_abc")
  EXPECT_EQ(ExtractApiKey(WithAuth("Basic YXBpOmNrX2FiYw==")), "ck_abc");
}

TEST(ExtractApiKey, MissingHeaderGivesEmpty) { EXPECT_EQ(ExtractApiKey(http::HttpRequest{}), ""); }

TEST(HashApiKey, IsHexSha256AndNotTheKey) {
  std::string h = HashApiKey("abc");
  EXPECT_EQ(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(NewApiKeySecret, HasPrefixAndLength) {
  std::string k = NewApiKeySecret();
  EXPECT_EQ(k.rfind("ck_", 0), 0u);
  EXPECT_EQ(k.size(), 43u);
  EXPECT_NE(k, NewApiKeySecret());
}

}  // namespace
}  // namespace cohort::api
