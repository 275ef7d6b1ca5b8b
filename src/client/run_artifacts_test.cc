// The client's side of artifacts through a real agent (the stand-in binary from src/agent): the
// names checked at the call, the intent frame stored and handed to the agent's uploader, its
// state asked back over the agent protocol, and a failure carried back with the server's
// message. The server here is the fake one (it has no blob routes: every blob answers 404); the
// upload itself against a real `cohort server` is tests/distributed/test_artifact_upload.py.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/fake_cohort_server_for_test.h"
#include "client/run_fixture_for_test.h"
#include "cohort/cohort.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using agent::testing::FakeCohortServer;

class RunArtifactsTest : public client::testing::RunFixture {
 protected:
  RunArtifactsTest() : RunFixture("/tmp/cohort-art-XXXXXX") {}

  static Settings Base(const std::string& url) { return RunFixture::Base(url, "agent"); }

  std::string File(const std::string& name, const std::string& bytes) {
    const std::string path = root_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(RunArtifactsTest, BadNamesAndPathsAreRefusedAtTheCall) {
  FakeCohortServer server;
  auto run = Init(Base(server.url()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string f = File("a.bin", "abc");
  struct Case {
    Artifact a;
    std::string says;
  } cases[] = {
      {Artifact{.name = "a/b", .type = "model", .files = {{"x", f}}}, "a/b"},
      {Artifact{.name = "ok", .type = "model", .aliases = {"latest"}, .files = {{"x", f}}},
       "reserved"},
      {Artifact{.name = "ok", .type = "model", .files = {{"../x", f}}}, "'..'"},
      {Artifact{.name = "ok", .type = "model", .files = {{"x", f}, {"x", f}}}, "twice"},
      {Artifact{.name = "ok", .type = "model", .metadata_json = "[1]", .files = {{"x", f}}},
       "metadata"},
      {Artifact{.name = "ok", .type = "model"}, "no files"},
  };
  for (const auto& c : cases) {
    auto id = run->LogArtifact(c.a);
    ASSERT_FALSE(id.ok()) << c.says;
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(id.status().message().find(c.says), std::string::npos) << id.status().message();
  }
  EXPECT_TRUE(run->Finish().ok());
}

TEST_F(RunArtifactsTest, TheAgentTakesTheIntentAndAFailureComesBackWithTheServersMessage) {
  FakeCohortServer server;  // no blob routes: the uploader's status request answers 404
  auto run = Init(Base(server.url()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_FALSE(run->artifact_staging_dir().empty());
  const std::string f = File("model.bin", std::string(1000, 'x'));
  auto id =
      run->LogArtifact(Artifact{.name = "ckpt", .type = "model", .files = {{"model.bin", f}}});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto v = run->WaitArtifact(*id, 20);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition) << v.status().ToString();
  EXPECT_NE(v.status().message().find("HTTP 404"), std::string::npos) << v.status().ToString();
  auto state = run->ArtifactState(*id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->state, "failed");
  EXPECT_EQ(state->name, "ckpt");
  EXPECT_EQ(state->bytes_total, 1000);
  // The staged copy is removed with the failed intent; the user's file is untouched.
  EXPECT_FALSE(fs::exists(run->artifact_staging_dir() + "/" + *id));
  EXPECT_TRUE(fs::exists(f));
  EXPECT_TRUE(run->Finish().ok());
}

TEST_F(RunArtifactsTest, AnUnknownIdIsNotFound) {
  FakeCohortServer server;
  auto run = Init(Base(server.url()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto v = run->ArtifactState("nosuch");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(run->Finish().ok());
}

}  // namespace
}  // namespace cohort
