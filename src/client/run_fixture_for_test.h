// For tests of runs against a fake server: each test gets an isolated client environment
// (private_agents_for_test.h) whose agents are stopped before it is removed, the settings such
// tests start from, and polling. Header-only.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "client/private_agents_for_test.h"
#include "cohort/cohort.h"
#include "core/clock.h"

namespace cohort::client::testing {

class RunFixture : public ::testing::Test {
 protected:
  // `mkdtemp_template`: where the environment goes ("/tmp/cohort-run-XXXXXX").
  explicit RunFixture(std::string mkdtemp_template) : template_(std::move(mkdtemp_template)) {}

  void SetUp() override { root_ = IsolateClientEnvironment(template_, COHORT_TEST_AGENT_BIN); }
  // Agents may still be deleting the directories of writers they finished uploading: the shared
  // one and the private ones of this test's runs exit before the tree is removed, so that they
  // never delete the same files.
  void TearDown() override { StopAgentsAndRemove(root_); }

  // Project "p", writer "w0", key "ck_test", no console capture or system metrics, 10 s
  // timeouts.
  static Settings Base(const std::string& url, const std::string& transport) {
    Settings s;
    s.base_url = url;
    s.api_key = "ck_test";
    s.project = "p";
    s.label = "w0";
    s.transport = transport;
    s.capture_console = false;
    s.stats_sampling_interval_s = 0;
    s.init_timeout_s = 10;
    s.finish_timeout_s = 10;
    return s;
  }

  // Polls `cond` every 20 ms for up to `ms`; its last answer.
  static bool WaitFor(const std::function<bool()>& cond, int64_t ms) {
    const int64_t deadline = NowMillis() + ms;
    while (NowMillis() < deadline) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return cond();
  }

  std::string root_;

 private:
  std::string template_;
};

}  // namespace cohort::client::testing
