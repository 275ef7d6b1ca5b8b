// Run::LogArtifact end to end against a real Cohort server (server::ServerApp in this process on
// a free port) through the real agent (the stand-in binary): files hashed and staged off the
// caller's thread, uploaded, committed; the staged copies removed; the same files again answer
// the same version with nothing uploaded.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "agent/artifact_intent.h"
#include "agent/hash_cache.h"
#include "client/private_agents_for_test.h"
#include "cohort/cohort.h"
#include "core/sha256.h"
#include "core/user_config.h"
#include "server/server_app.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

class RunArtifactsRealServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = client::testing::IsolateClientEnvironment("/tmp/cohort-artreal-XXXXXX", COHORT_TEST_AGENT_BIN);
    server::ServerConfig c;
    c.data_dir = root_ + "/server";
    c.http.port = 0;
    c.http.worker_threads = 8;
    c.write_user_config = false;
    c.entity = "alice";
    c.sweep_interval_s = 3600;
    app_ = std::make_unique<server::ServerApp>(c);
    Status st = app_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  void TearDown() override {
    client::testing::StopAgents(root_);
    if (app_) app_->Stop();
    fs::remove_all(root_);
  }

  std::string Write(const std::string& name, size_t n, uint32_t seed) {
    std::string data(n, '\0');
    std::mt19937 rng(seed);
    for (auto& c : data) c = char(rng());
    const std::string path = root_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  // A run of project "p" through the agent.
  Settings RunSettings() const {
    Settings s;
    s.base_url = app_->url();
    s.api_key = app_->bootstrap_key();
    s.project = "p";
    s.label = "w0";
    s.transport = "agent";
    s.capture_console = false;
    s.stats_sampling_interval_s = 0;
    s.init_timeout_s = 10;
    s.finish_timeout_s = 20;
    return s;
  }

  std::string root_;
  std::unique_ptr<server::ServerApp> app_;
};

TEST_F(RunArtifactsRealServerTest, LogArtifactHashesStagesUploadsAndCommits) {
  auto run = Init(RunSettings());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string a = Write("a.bin", (8 << 20) + 5, 1);  // 2 parts
  const std::string b = Write("b.txt", 100, 2);
  Artifact art{.name = "ckpt",
               .type = "model",
               .metadata_json = R"({"epoch": 1})",
               .aliases = {"best"},
               .files = {{"model/a.bin", a}, {"b.txt", b, /*immutable=*/true}},
               .references = {{"data/train.csv", "s3://bucket/train.csv", "etag", 99}}};
  auto id = run->LogArtifact(art);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto v = run->WaitArtifact(*id, 60);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->version, "v0");
  EXPECT_TRUE(v->created);
  EXPECT_EQ(v->parts_uploaded, 3);
  // The digest the contract defines, from the files' own SHA-256.
  agent::ArtifactIntent expect;
  auto file = [](const std::string& path, const std::string& source) {
    std::ifstream in(source, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    agent::ArtifactFileEntry e;
    e.path = path;
    e.sha256 = Sha256::Hex(data);
    e.size = int64_t(data.size());
    return e;
  };
  expect.files = {file("model/a.bin", a), file("b.txt", b)};
  agent::ArtifactFileEntry ref;
  ref.path = "data/train.csv";
  ref.ref = "s3://bucket/train.csv";
  ref.digest = "etag";
  ref.size = 99;
  expect.files.push_back(ref);
  EXPECT_EQ(v->digest, agent::ManifestDigest(expect));
  EXPECT_EQ(v->size, int64_t((8 << 20) + 5 + 100 + 99));  // references count with their size
  EXPECT_FALSE(fs::exists(run->artifact_staging_dir() + "/" + *id));
  // The same files again: the same version, nothing uploaded.
  art.aliases = {};
  auto again = run->LogArtifact(art);
  ASSERT_TRUE(again.ok());
  auto v2 = run->WaitArtifact(*again, 60);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version, "v0");
  EXPECT_FALSE(v2->created);
  EXPECT_EQ(v2->parts_uploaded, 0);
  EXPECT_TRUE(run->Finish().ok());
}

TEST_F(RunArtifactsRealServerTest, ADigestTheHashCacheGotWrongFailsTheVersionAndIsForgotten) {
  // A file rewritten without moving its modification time: the cache answers its old digest,
  // the server finds other bytes and refuses them; the entry must go, or every later version
  // of the file fails the same way.
  auto run = Init(RunSettings());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string c = Write("c.bin", 1000, 3);
  wal::FileSystem* fs = wal::FileSystem::Default();
  auto st = fs->Stat(c);
  ASSERT_TRUE(st.ok());
  const std::string cache = UserCacheDir();
  agent::RecordHash(fs, cache, *st, Sha256::Hex("the bytes it had before"));
  ASSERT_TRUE(agent::LookupHash(fs, cache, *st).has_value());
  Artifact art{.name = "c", .type = "model", .files = {{"c.bin", c, /*immutable=*/true}}};
  auto id = run->LogArtifact(art);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto failed = run->WaitArtifact(*id, 60);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("not the blob announced"), std::string::npos)
      << failed.status().ToString();
  EXPECT_FALSE(agent::LookupHash(fs, cache, *st).has_value());  // forgotten
  auto again = run->LogArtifact(art);                           // read this time
  ASSERT_TRUE(again.ok());
  auto v = run->WaitArtifact(*again, 60);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->version, "v0");
  EXPECT_TRUE(run->Finish().ok());
}

// The server's media limits come with the writer's join; CheckMediaSet holds a set to them
// (the server's default per step while they are not known: an offline run).
TEST_F(RunArtifactsRealServerTest, MediaSetsAreCheckedAgainstTheLimitsTheServerSaid) {
  app_->Stop();
  server::ServerConfig c;
  c.data_dir = root_ + "/limited";
  c.http.port = 0;
  c.write_user_config = false;
  c.entity = "alice";
  c.sweep_interval_s = 3600;
  c.limits.max_media_file_bytes = 100;
  c.limits.max_media_per_step = 3;
  app_ = std::make_unique<server::ServerApp>(c);
  ASSERT_TRUE(app_->Start().ok());
  auto run = Init(RunSettings());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->max_media_file_bytes(), 100);
  EXPECT_EQ(run->max_media_per_step(), 3);
  EXPECT_TRUE(run->CheckMediaSet("imgs", 3, 100).ok());
  EXPECT_TRUE(run->CheckMediaSet("imgs", 3, -1).ok());
  Status many = run->CheckMediaSet("imgs", 4, -1);
  EXPECT_EQ(many.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.message().find("'imgs': 4 media in one step, more than the server takes (3: "
                                "its --max-media-per-step)"),
            std::string::npos)
      << many.ToString();
  Status big = run->CheckMediaSet("clip", 1, 101);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("'clip': a file of 101 bytes, more than the server takes (100: "
                               "its --max-media-file-bytes)"),
            std::string::npos)
      << big.ToString();
  ASSERT_TRUE(run->Finish(0).ok());

  Settings offline = RunSettings();
  offline.mode = "offline";
  auto off = Init(offline);
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->max_media_file_bytes(), 0);
  EXPECT_TRUE(off->CheckMediaSet("clip", 1, int64_t{1} << 40).ok());  // not known: the server's
  EXPECT_TRUE(off->CheckMediaSet("imgs", 1024, -1).ok());
  EXPECT_EQ(off->CheckMediaSet("imgs", 1025, -1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(off->Finish(0).ok());
}

}  // namespace
}  // namespace cohort
