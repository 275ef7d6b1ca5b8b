// A program of another project that uses the installed C++ client (tests/packaging/
// test_cpp_install.py builds it with find_package, pkg-config and FetchContent): init, log a few
// steps, finish. It prints "run <id>" and uses nothing but <cohort/cohort.h> and the standard
// library. The run's project comes from COHORT_PROJECT; the server and key from the config file.
#include <cohort/cohort.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  cohort::Settings settings;
  settings.name = argc > 1 ? argv[1] : "consumer";
  settings.config_json = R"({"how": ")" + settings.name + R"("})";
  settings.stats_sampling_interval_s = 0;  // no system metrics: only what is logged below
  settings.init_timeout_s = 20;
  auto run = cohort::Init(settings);
  if (!run.ok()) {
    std::fprintf(stderr, "init: %s\n", run.status().ToString().c_str());
    return 1;
  }
  std::printf("run %s\n", run->id().c_str());
  for (int step = 0; step < 5; ++step) {
    run->Log({{"loss", 1.0 / (step + 1)}, {"acc", 0.1 * step}});
  }
  if (cohort::Status st = run->UpdateSummary(R"({"best": 42.5})"); !st.ok()) {
    std::fprintf(stderr, "summary: %s\n", st.ToString().c_str());
    return 1;
  }
  cohort::Status st = run->Finish(0);
  if (!st.ok()) {
    std::fprintf(stderr, "finish: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("finished %s\n", run->url().c_str());
  return 0;
}
