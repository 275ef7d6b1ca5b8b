// A stand-in for the `cohort` binary in tests of this directory and of src/client: it runs
// `agent [--private --fd N]` (RunAgent with AgentOptionsFromEnv) and `sync PATH...` (RunSync),
// nothing else.
// Tests point COHORT_BIN at it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/sync.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "agent") == 0) {
    cohort::agent::AgentOptions options = cohort::agent::AgentOptionsFromEnv();
    for (int i = 2; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--fd") == 0) options.private_fd = std::atoi(argv[i + 1]);
    }
    return cohort::agent::RunAgent(options);
  }
  if (argc >= 2 && std::strcmp(argv[1], "sync") == 0) {
    std::vector<std::string> paths(argv + 2, argv + argc);
    auto report = cohort::agent::RunSync(paths, {});
    if (!report.ok()) {
      std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
      return 1;
    }
    for (const auto& e : report->errors) std::fprintf(stderr, "%s\n", e.c_str());
    std::printf("%d writer(s), %d uploaded, %lld points\n", report->writers, report->uploaded,
                static_cast<long long>(report->points));
    return report->errors.empty() ? 0 : 1;
  }
  return 2;
}
