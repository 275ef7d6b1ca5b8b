// For tests of the client library: finds and stops the private agents (`cohort agent --private`)
// that runs of a test started, so that none outlives the test (a private agent keeps uploading
// after its client exits, up to an hour when the server is down) or deletes files while the test
// removes its temporary directory. Header-only.
#pragma once

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace cohort::client::testing {

// The `agent --private` processes whose environment has COHORT_DIR=`data_dir` (a private
// agent's data dir is its client's).
inline std::vector<int> PrivateAgentPids(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::vector<int> out;
  const std::string marker = "COHORT_DIR=" + data_dir + '\0';
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto read = [&](const char* file) {
      std::ifstream in(entry.path() / file);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    if (read("cmdline").find("--private") == std::string::npos) continue;
    if (read("environ").find(marker) == std::string::npos) continue;
    out.push_back(std::stoi(name));
  }
  return out;
}

// SIGTERMs the processes and waits (at most 5 s) until each is gone.
inline void StopAndWait(const std::vector<int>& pids) {
  for (int pid : pids) kill(pid, SIGTERM);
  for (int pid : pids) {
    for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace cohort::client::testing
