#include "agent/artifact_intent.h"

#include <gtest/gtest.h>

#include "core/json.h"

namespace cohort::agent {
namespace {

const std::string kSha(64, 'a');

std::string Intent(const std::string& files, const std::string& extra = "") {
  return R"({"id": "abc123", "name": "ckpt", "type": "model", "aliases": ["best"],)" + extra +
         R"( "files": )" + files + "}";
}

TEST(ArtifactIntentTest, ParsesBlobsAndReferencesAndRoundTrips) {
  auto in = ParseArtifactIntent(Intent(
      R"([{"path": "model.pt", "sha256": ")" + kSha +
          R"(", "size": 12, "source": "/tmp/x"}, {"path": "d/t.csv", "ref": "s3://b/t.csv", "digest": "e1", "size": 9}])",
      R"( "metadata": {"epoch": 3}, "staging": "/s/abc123", "run": "r1", "writer": "rank_0",)"));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->files.size(), 2u);
  EXPECT_TRUE(in->files[1].is_ref());
  EXPECT_EQ(in->blob_bytes(), 12);
  auto again = ParseArtifactIntent(ToJson(*in));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ToJson(*again), ToJson(*in));
  EXPECT_EQ(again->metadata_json, R"({"epoch":3})");
}

TEST(ArtifactIntentTest, CommitBodyLeavesOutWhatOnlyThisMachineUses) {
  auto in = ParseArtifactIntent(
      Intent(R"([{"path": "m", "sha256": ")" + kSha + R"(", "size": 1, "source": "/tmp/x"}])",
             R"( "staging": "/s/abc123", "run": "r1",)"));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  auto body = json::Parse(CommitBody(*in));
  ASSERT_TRUE(body.ok());
  const auto& o = body->as_object();
  EXPECT_FALSE(o.contains("id"));
  EXPECT_FALSE(o.contains("name"));  // in the commit's URL
  EXPECT_FALSE(o.contains("staging"));
  EXPECT_EQ(o.at("run").as_string(), "r1");
  const auto& f = o.at("files").as_array()[0].as_object();
  EXPECT_FALSE(f.contains("source"));
  EXPECT_EQ(f.at("sha256").as_string(), kSha);
  EXPECT_EQ(f.at("size").as_int64(), 1);
}

TEST(ArtifactIntentTest, RefusesBadNamesPathsAndDigestsNamingTheProblem) {
  const std::string ok_file =
      R"([{"path": "m", "sha256": ")" + kSha + R"(", "size": 1, "source": "/tmp/x"}])";
  struct Case {
    std::string json;
    std::string says;
  } cases[] = {
      {R"({"id": "a", "name": "a/b", "type": "model", "files": )" + ok_file + "}", "a/b"},
      {R"({"id": "a", "name": ".x", "type": "model", "files": )" + ok_file + "}", "'.'"},
      {R"({"id": "a", "name": "x", "type": "model", "aliases": ["v3"], "files": )" + ok_file + "}",
       "reserved"},
      {R"({"id": "a", "name": "x", "type": "model", "aliases": ["latest"], "files": )" + ok_file +
           "}",
       "reserved"},
      {Intent(R"([{"path": "../m", "sha256": ")" + kSha + R"(", "size": 1, "source": "/x"}])"),
       "'..'"},
      {Intent(R"([{"path": "m", "sha256": "ABC", "size": 1, "source": "/x"}])"), "sha256"},
      {Intent(R"([{"path": "m", "sha256": ")" + kSha + R"(", "size": 1, "source": "rel"}])"),
       "absolute"},
      {Intent(R"([{"path": "m", "ref": "ftp://x/y"}])"), "ftp://"},
      {Intent(R"([{"path": "m", "ref": "s3://b/k"}, {"path": "m", "ref": "s3://b/j"}])"), "twice"},
      {Intent("[]", R"( "surprise": 1,)"), "surprise"},
  };
  for (const auto& c : cases) {
    auto in = ParseArtifactIntent(c.json);
    ASSERT_FALSE(in.ok()) << c.json;
    EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(in.status().message().find(c.says), std::string::npos)
        << in.status().message() << " should name " << c.says;
  }
}

TEST(ArtifactIntentTest, ManifestDigestFollowsTheContract) {
  // docs/artifacts.md "Digests": sorted by path, blob and reference lines.
  auto in = ParseArtifactIntent(Intent(
      R"([{"path": "z", "ref": "s3://b/k", "digest": "e", "size": 5}, {"path": "a", "sha256": ")" +
      kSha + R"(", "size": 3, "source": "/x"}])"));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  // printf 'cohort-artifact-manifest-v1\na\t<64 a>\t3\nz\tref:s3://b/k\te\t5\n' | sha256sum
  EXPECT_EQ(ManifestDigest(*in),
            "34b5f5428ccfa80f8c035abac12b4d3b2d34c8642d514c4d7ae10e45ad5708fa");
}

TEST(ArtifactIntentTest, StatusRoundTrips) {
  ArtifactStatus s;
  s.id = "abc";
  s.state = "committed";
  s.version = "v3";
  s.digest = kSha;
  s.size = 42;
  s.created = true;
  s.bytes_done = s.bytes_total = 42;
  s.parts_uploaded = 1;
  auto back = ParseArtifactStatusReply(ArtifactStatusReplyJson({s, ArtifactStatus{.id = "x"}}));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ(ToJson((*back)[0]), ToJson(s));
  EXPECT_EQ((*back)[1].state, "unknown");
  auto ids = ParseArtifactStatusRequest(ArtifactStatusRequestJson({"a", "b"}));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace cohort::agent
