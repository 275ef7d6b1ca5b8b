#include "core/artifact_names.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort {
namespace {

std::string Message(const Status& s) { return std::string(s.message()); }

TEST(ArtifactNames, AcceptsNamesOfTheAllowedCharacters) {
  EXPECT_TRUE(ValidateArtifactName("artifact name", "model-v2_final.pt").ok());
  EXPECT_TRUE(ValidateArtifactName("artifact name", std::string(128, 'a')).ok());
}

TEST(ArtifactNames, RejectsBadNamesNamingTheFieldAndTheProblem) {
  Status empty = ValidateArtifactName("artifact type", "");
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Message(empty).find("artifact type"), std::string::npos) << Message(empty);
  EXPECT_FALSE(ValidateArtifactName("n", std::string(129, 'a')).ok());
  Status slash = ValidateArtifactName("artifact name", "a/b");
  EXPECT_NE(Message(slash).find("\"a/b\""), std::string::npos) << Message(slash);
  EXPECT_FALSE(ValidateArtifactName("n", "with space").ok());
  EXPECT_FALSE(ValidateArtifactName("n", "tab\t").ok());
  Status dot = ValidateArtifactName("n", ".hidden");
  EXPECT_NE(Message(dot).find("'.'"), std::string::npos) << Message(dot);
}

TEST(ArtifactNames, ReservedAliasesAreRefusedOthersAccepted) {
  for (const char* a : {"latest", "versions", "aliases", "v0", "v12", "v01"}) {
    EXPECT_TRUE(IsReservedAlias(a)) << a;
    Status s = ValidateAliasName(a);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << a;
    EXPECT_NE(Message(s).find("reserved"), std::string::npos) << Message(s);
  }
  for (const char* a : {"best", "v", "v1a", "prod", "vv1"}) {
    EXPECT_FALSE(IsReservedAlias(a)) << a;
    EXPECT_TRUE(ValidateAliasName(a).ok()) << a;
  }
  EXPECT_FALSE(ValidateAliasName("a b").ok());
}

TEST(ArtifactNames, RelativePaths) {
  for (const char* p : {"model.pt", "ckpt/step-10/weights.bin", "a/.b", "ü/x"}) {
    EXPECT_TRUE(ValidateRelativePath("path", p).ok()) << p;
  }
  struct Bad {
    std::string path;
    const char* says;
  };
  for (const Bad& b : {Bad{"", "1-1024"}, Bad{std::string(1025, 'a'), "1-1024"},
                       Bad{"/abs", "relative"}, Bad{"a//b", "segments"}, Bad{"a/", "segments"},
                       Bad{"./a", "segments"}, Bad{"a/../b", "segments"},
                       Bad{"a\\b", "backslash"}, Bad{"a\nb", "control"},
                       Bad{"\xff", "UTF-8"}}) {
    Status s = ValidateRelativePath("file name", b.path);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << b.path;
    EXPECT_NE(Message(s).find(b.says), std::string::npos) << Message(s);
    EXPECT_EQ(Message(s).rfind("file name", 0), 0u) << Message(s);
  }
}

TEST(ArtifactNames, VersionNames) {
  EXPECT_EQ(ParseVersionName("v0"), 0);
  EXPECT_EQ(ParseVersionName("v42"), 42);
  EXPECT_EQ(ParseVersionName("v01"), std::nullopt);
  EXPECT_EQ(ParseVersionName("v"), std::nullopt);
  EXPECT_EQ(ParseVersionName("latest"), std::nullopt);
  EXPECT_EQ(ParseVersionName("v-1"), std::nullopt);
  EXPECT_EQ(VersionName(7), "v7");
}

}  // namespace
}  // namespace cohort
