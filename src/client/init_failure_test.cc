// A failed Init returns within init_timeout: the run it never started is not "finished" on the
// way out (which would retry for finish_timeout more). The failure here is the one behind the
// old "Init fails after 20 s under load" flake: the writer's WAL is locked by another process
// (there, an agent that answered the open too late), so a private agent cannot open it. And
// without a `cohort` binary no agent can serve the run: Init says what to set.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "cohort/cohort.h"
#include "core/clock.h"
#include "wal/file.h"
#include "wal/log.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

TEST(InitFailure, LockedWalFailsInitWithinInitTimeout) {
  char tmpl[] = "/tmp/cohort-initfail-XXXXXX";
  std::string root = mkdtemp(tmpl);
  setenv("HOME", root.c_str(), 1);
  setenv("COHORT_BIN", COHORT_TEST_AGENT_BIN, 1);
  for (const char* v : {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_RUN_ID", "COHORT_MODE",
                        "COHORT_AGENT", "RANK", "TORCHELASTIC_RUN_ID"}) {
    unsetenv(v);
  }
  std::string wal = root + "/data/locked-run/w0/wal";
  fs::create_directories(wal);
  auto lock = wal::FileSystem::Default()->LockFile(wal + "/" + std::string(wal::kLockFileName));
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();

  Settings s;
  s.base_url = "http://127.0.0.1:1";
  s.api_key = "ck_test";
  s.project = "p";
  s.run_id = "locked-run";
  s.label = "w0";
  s.dir = root + "/data";
  s.transport = "inprocess";
  s.capture_console = false;
  s.stats_sampling_interval_s = 0;
  s.handle_sigterm = false;
  s.init_timeout_s = 2;
  s.finish_timeout_s = 10;
  int64_t start = NowMillis();
  auto run = Init(s);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("locked"), std::string::npos) << run.status().ToString();
  EXPECT_LT(NowMillis() - start, 3000);
  lock->reset();
  fs::remove_all(root);
}

TEST(InitFailure, WithoutACohortBinaryInitFailsNamingCohortBin) {
  char tmpl[] = "/tmp/cohort-initfail-XXXXXX";
  std::string root = mkdtemp(tmpl);
  setenv("HOME", root.c_str(), 1);
  setenv("COHORT_BIN", (root + "/no-such-cohort").c_str(), 1);
  // A socket of its own: an agent of this machine's user (the default socket does not depend on
  // HOME) answered, and Init succeeded through it.
  setenv("COHORT_AGENT_SOCKET", (root + "/agent.sock").c_str(), 1);
  for (const char* v : {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_RUN_ID", "COHORT_MODE",
                        "COHORT_AGENT", "RANK", "TORCHELASTIC_RUN_ID"}) {
    unsetenv(v);
  }
  for (const char* transport : {"private", "agent"}) {
    Settings s;
    s.base_url = "http://127.0.0.1:1";
    s.api_key = "ck_test";
    s.project = "p";
    s.label = "w0";
    s.dir = root + "/data";
    s.transport = transport;
    s.capture_console = false;
    s.stats_sampling_interval_s = 0;
    s.handle_sigterm = false;
    s.init_timeout_s = 5;
    int64_t start = NowMillis();
    auto run = Init(s);
    ASSERT_FALSE(run.ok()) << transport;
    EXPECT_NE(run.status().message().find("COHORT_BIN"), std::string::npos)
        << run.status().ToString();
    EXPECT_LT(NowMillis() - start, 5000) << transport;
  }
  unsetenv("COHORT_BIN");
  unsetenv("COHORT_AGENT_SOCKET");
  fs::remove_all(root);
}

}  // namespace
}  // namespace cohort
