#include "client/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace cohort::client {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-config-XXXXXX";
    home_ = mkdtemp(tmpl);
    env_.Set("HOME", home_);
  }
  void TearDown() override { fs::remove_all(home_); }

  void WriteConfigFile(const std::string& dir, const std::string& json) {
    fs::create_directories(dir + "/cohort");
    std::ofstream(dir + "/cohort/config.json") << json;
  }

  std::string home_;
  MapEnvironment env_;
};

TEST_F(ConfigTest, DefaultsWithoutEnvironmentOrFile) {
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->settings.base_url, "http://127.0.0.1:8787");
  EXPECT_EQ(r->settings.project, "uncategorized");
  EXPECT_EQ(r->settings.mode, "online");
  EXPECT_EQ(r->settings.transport, "agent");
  EXPECT_EQ(r->settings.entity, "");
  EXPECT_EQ(r->settings.dir, home_ + "/.local/share/cohort/agent");
  EXPECT_EQ(r->settings.run_id.size(), 8u);
  EXPECT_TRUE(r->run_id_generated);
  EXPECT_TRUE(*r->settings.primary);
  EXPECT_TRUE(*r->settings.update_finish_state);
  EXPECT_EQ(r->settings.resume, "allow");
}

// NaN, infinity ("wait for ever") or a huge timeout became a deadline in the past (undefined
// int64 conversion): finish dropped every frame without a try. Refused, naming the field.
TEST_F(ConfigTest, TimeoutsMustBeFiniteAndAtMostADay) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan(""), 1e300, 86401.0}) {
    Settings in;
    in.finish_timeout_s = bad;
    auto r = ResolveSettings(in, env_);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("finish_timeout_s"), std::string::npos);
    Settings init;
    init.init_timeout_s = bad;
    auto i = ResolveSettings(init, env_);
    ASSERT_FALSE(i.ok()) << bad;
    EXPECT_NE(i.status().message().find("init_timeout_s"), std::string::npos);
  }
  Settings day;
  day.finish_timeout_s = 86400;
  EXPECT_TRUE(ResolveSettings(day, env_).ok());
}

TEST_F(ConfigTest, ConfigFileFillsUrlAndKey) {
  WriteConfigFile(home_ + "/.config", R"({"base_url":"http://file:1","api_key":"ck_file"})");
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.base_url, "http://file:1");
  EXPECT_EQ(r->settings.api_key, "ck_file");
}

TEST_F(ConfigTest, XdgConfigHomeWinsOverHome) {
  WriteConfigFile(home_ + "/.config", R"({"api_key":"ck_home"})");
  WriteConfigFile(home_ + "/xdg", R"({"api_key":"ck_xdg"})");
  env_.Set("XDG_CONFIG_HOME", home_ + "/xdg");
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.api_key, "ck_xdg");
}

TEST_F(ConfigTest, EnvironmentWinsOverFile) {
  WriteConfigFile(home_ + "/.config", R"({"base_url":"http://file:1","api_key":"ck_file"})");
  env_.Set("COHORT_BASE_URL", "http://env:2/");
  env_.Set("COHORT_API_KEY", "ck_env");
  env_.Set("COHORT_ENTITY", "alice");
  env_.Set("COHORT_PROJECT", "mnist");
  env_.Set("COHORT_RUN_ID", "given-1");
  env_.Set("COHORT_MODE", "offline");
  env_.Set("COHORT_DIR", "/data/x");
  env_.Set("COHORT_AGENT", "inprocess");
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.base_url, "http://env:2");
  EXPECT_EQ(r->settings.api_key, "ck_env");
  EXPECT_EQ(r->settings.entity, "alice");
  EXPECT_EQ(r->settings.project, "mnist");
  EXPECT_EQ(r->settings.run_id, "given-1");
  EXPECT_FALSE(r->run_id_generated);
  EXPECT_EQ(r->settings.mode, "offline");
  EXPECT_EQ(r->settings.dir, "/data/x");
  EXPECT_EQ(r->settings.transport, "private");  // the name of the mode a private agent replaced
}

// A script written for the vendor's SDK (`import cohort as wandb`) keeps its environment: a CI
// job with WANDB_MODE=disabled logged online to the server, WANDB_PROJECT was ignored.
TEST_F(ConfigTest, TheVendorsVariablesComeAfterCohorts) {
  env_.Set("WANDB_MODE", "disabled");
  env_.Set("WANDB_PROJECT", "wproj");
  env_.Set("WANDB_RUN_ID", "wid-1");
  env_.Set("WANDB_ENTITY", "their-team");  // an identity on the vendor's service: not taken
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->settings.mode, "disabled");
  EXPECT_EQ(r->settings.project, "wproj");
  EXPECT_EQ(r->settings.run_id, "wid-1");
  EXPECT_EQ(r->settings.entity, "");
  env_.Set("WANDB_MODE", "dryrun");
  auto dry = ResolveSettings({}, env_);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->settings.mode, "offline");
  env_.Set("COHORT_MODE", "online");
  env_.Set("COHORT_PROJECT", "cproj");
  env_.Set("COHORT_RUN_ID", "cid-1");
  auto ours = ResolveSettings({}, env_);
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(ours->settings.mode, "online");
  EXPECT_EQ(ours->settings.project, "cproj");
  EXPECT_EQ(ours->settings.run_id, "cid-1");
}

TEST_F(ConfigTest, SettingsWinOverEnvironment) {
  env_.Set("COHORT_PROJECT", "from-env");
  env_.Set("COHORT_API_KEY", "ck_env");
  env_.Set("COHORT_RUN_ID", "env-id");
  Settings s;
  s.project = "from-settings";
  s.api_key = "ck_settings";
  s.run_id = "settings-id";
  auto r = ResolveSettings(s, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.project, "from-settings");
  EXPECT_EQ(r->settings.api_key, "ck_settings");
  EXPECT_EQ(r->settings.run_id, "settings-id");
}

TEST_F(ConfigTest, TorchrunRankGivesLabelAndPrimaryOfSharedRun) {
  env_.Set("RANK", "3");
  env_.Set("LOCAL_RANK", "1");
  env_.Set("WORLD_SIZE", "8");
  env_.Set("COHORT_RUN_ID", "shared-run");
  Settings shared;
  shared.shared = true;
  auto r = ResolveSettings(shared, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.label, "rank_3");
  EXPECT_FALSE(*r->settings.primary);
  EXPECT_FALSE(*r->settings.update_finish_state);  // only the primary ends the run
  EXPECT_EQ(r->world_size, 8);
  env_.Set("RANK", "0");
  r = ResolveSettings(shared, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.label, "rank_0");
  EXPECT_TRUE(*r->settings.primary);
  EXPECT_TRUE(*r->settings.update_finish_state);
}

TEST_F(ConfigTest, UpdateFinishStateDefaultsToThePrimaryFlagOfASharedWriter) {
  env_.Set("COHORT_RUN_ID", "shared-run");
  Settings shared;
  shared.shared = true;
  auto r = ResolveSettings(shared, env_);  // no rank known: every process is primary
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r->settings.primary);
  EXPECT_TRUE(*r->settings.update_finish_state);
  shared.primary = false;
  r = ResolveSettings(shared, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r->settings.update_finish_state);
  shared.update_finish_state = true;  // an explicit value wins
  env_.Set("RANK", "2");
  shared.primary.reset();
  r = ResolveSettings(shared, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r->settings.primary);
  EXPECT_TRUE(*r->settings.update_finish_state);
  Settings own;  // a run of its own is ended by its writer, whatever its rank or primary flag
  own.primary = false;
  r = ResolveSettings(own, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r->settings.update_finish_state);
}

TEST_F(ConfigTest, PlainRunUnderTorchrunIsPrimaryOfItsOwnRunOnEveryRank) {
  env_.Set("RANK", "3");
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.label, "rank_3");
  EXPECT_TRUE(*r->settings.primary);
  Settings explicit_worker;
  explicit_worker.primary = false;
  r = ResolveSettings(explicit_worker, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r->settings.primary);
}

TEST_F(ConfigTest, LabelWithoutTorchrunIsHostAndRandomSuffix) {
  auto a = ResolveSettings({}, env_);
  auto b = ResolveSettings({}, env_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->settings.label.rfind(a->host + "-", 0), 0u);
  EXPECT_EQ(a->settings.label.size(), a->host.size() + 5);
  EXPECT_NE(a->settings.label, b->settings.label);
}

TEST_F(ConfigTest, SharedRanksDeriveTheSameRunIdFromTorchElastic) {
  env_.Set("TORCHELASTIC_RUN_ID", "job-42");
  Settings s;
  s.shared = true;
  env_.Set("RANK", "0");
  auto primary = ResolveSettings(s, env_);
  env_.Set("RANK", "5");
  auto worker = ResolveSettings(s, env_);
  ASSERT_TRUE(primary.ok() && worker.ok()) << worker.status().ToString();
  EXPECT_EQ(primary->settings.run_id, worker->settings.run_id);
  EXPECT_EQ(primary->settings.run_id, RunIdFromTorchElastic("job-42"));
  EXPECT_NE(RunIdFromTorchElastic("job-42"), RunIdFromTorchElastic("job-43"));
  EXPECT_EQ(RunIdFromTorchElastic("job-42").size(), 8u);
  EXPECT_FALSE(primary->run_id_generated);
}

TEST_F(ConfigTest, TorchElasticNoneOrUnsharedDoesNotDerive) {
  env_.Set("TORCHELASTIC_RUN_ID", "none");
  Settings shared;
  shared.shared = true;
  auto r = ResolveSettings(shared, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->run_id_generated);
  env_.Set("TORCHELASTIC_RUN_ID", "job-42");
  auto unshared = ResolveSettings({}, env_);  // one run per process
  ASSERT_TRUE(unshared.ok());
  EXPECT_NE(unshared->settings.run_id, RunIdFromTorchElastic("job-42"));
}

TEST_F(ConfigTest, CohortRunIdWinsOverTorchElastic) {
  env_.Set("TORCHELASTIC_RUN_ID", "job-42");
  env_.Set("COHORT_RUN_ID", "explicit");
  Settings s;
  s.shared = true;
  auto r = ResolveSettings(s, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.run_id, "explicit");
}

TEST_F(ConfigTest, SharedWorkerWithoutRunIdIsRejected) {
  Settings s;
  s.shared = true;
  s.primary = false;
  auto r = ResolveSettings(s, env_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ConfigTest, ModeSharedFromEnvironmentSetsShared) {
  env_.Set("COHORT_MODE", "shared");
  env_.Set("COHORT_RUN_ID", "r1");
  auto r = ResolveSettings({}, env_);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->settings.shared);
  EXPECT_EQ(r->settings.mode, "online");
}

TEST_F(ConfigTest, BadValuesAreRejected) {
  Settings bad_mode;
  bad_mode.mode = "sometimes";
  EXPECT_FALSE(ResolveSettings(bad_mode, env_).ok());
  Settings bad_id;
  bad_id.run_id = "a/b";
  EXPECT_FALSE(ResolveSettings(bad_id, env_).ok());
  Settings bad_label;
  bad_label.label = "x/y";
  EXPECT_FALSE(ResolveSettings(bad_label, env_).ok());
  Settings bad_transport;
  bad_transport.transport = "carrier-pigeon";
  EXPECT_FALSE(ResolveSettings(bad_transport, env_).ok());
}

TEST_F(ConfigTest, MalformedConfigFileIsAnErrorUnlessDisabled) {
  WriteConfigFile(home_ + "/.config", "{not json");
  EXPECT_FALSE(ResolveSettings({}, env_).ok());
  Settings disabled;
  disabled.mode = "disabled";
  EXPECT_TRUE(ResolveSettings(disabled, env_).ok());
}

// A project name the server refuses failed nowhere before the upload: an offline run's data was
// kept under it and `cohort sync` could not store it. Init refuses it with the server's rule.
TEST_F(ConfigTest, AProjectNameTheServerRefusesFailsInitOfflineToo) {
  for (const char* mode : {"online", "offline"}) {
    Settings s;
    s.mode = mode;
    s.project = "My Project";
    auto r = ResolveSettings(s, env_);
    ASSERT_FALSE(r.ok()) << mode;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "project: invalid name 'My Project' (1-64 characters of letters, digits, '_', "
              "'-', '.')");
  }
  Settings ok;
  ok.mode = "offline";
  ok.project = "my-project_2.0";
  EXPECT_TRUE(ResolveSettings(ok, env_).ok());
  Settings disabled;  // sends nothing
  disabled.mode = "disabled";
  disabled.project = "My Project";
  EXPECT_TRUE(ResolveSettings(disabled, env_).ok());
}

}  // namespace
}  // namespace cohort::client
