// A documented example of the Cohort C++ client: a pretend training loop that logs metrics.
//
// Build:  ninja -C build cohort_example_cpp
// Run:    cohort server &                       # once; writes ~/.config/cohort/config.json
//         build/src/client/cohort_example_cpp --steps 1000 --keys 10
//
// Where the run goes comes from the environment (COHORT_BASE_URL, COHORT_API_KEY,
// COHORT_PROJECT, COHORT_MODE=offline, ...) or the config file `cohort login` / `cohort server`
// wrote; see include/cohort/cohort.h. Under torchrun, every rank may run this program: labels
// default to rank_<RANK>; with --shared all ranks write into one run.
//
// Flags: --steps N (100)  --keys K (10)  --sleep-ms MS (0)  --shared  --exit-code C (0)
//        --rename NAME (after Init: rename the run and tag it NAME)
#include <cohort/cohort.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

struct Flags {
  int steps = 100;
  int keys = 10;
  int sleep_ms = 0;
  bool shared = false;
  int exit_code = 0;
  std::string rename;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (!std::strcmp(argv[i], "--steps")) f.steps = next();
    else if (!std::strcmp(argv[i], "--keys")) f.keys = next();
    else if (!std::strcmp(argv[i], "--sleep-ms")) f.sleep_ms = next();
    else if (!std::strcmp(argv[i], "--exit-code")) f.exit_code = next();
    else if (!std::strcmp(argv[i], "--shared")) f.shared = true;
    else if (!std::strcmp(argv[i], "--rename") && i + 1 < argc) f.rename = argv[++i];
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);

  // 1. Describe the run. Empty fields come from the environment and the config file.
  cohort::Settings settings;
  if (std::getenv("COHORT_PROJECT") == nullptr) settings.project = "examples";
  settings.group = "cpp-example";
  settings.job_type = "main";
  settings.config_json = R"({"lr": 0.01, "optimizer": "sgd", "steps": )" +
                         std::to_string(flags.steps) + "}";
  settings.shared = flags.shared;
  settings.stats_sampling_interval_s = 2;  // system metrics (cpu, memory, GPUs) every 2 s
  settings.init_timeout_s = 10;            // Init returns by then even if the server is down

  // 2. Start (or join) the run. This never blocks longer than init_timeout_s.
  auto run = cohort::Init(settings);
  if (!run.ok()) {
    std::fprintf(stderr, "cohort init failed: %s\n", run.status().ToString().c_str());
    return 1;
  }
  std::printf("run %s label %s%s\n", run->id().c_str(), run->label().c_str(),
              run->offline() ? " (buffering: server not reachable yet)" : "");
  std::fflush(stdout);

  // Run fields may change after Init (in order with the logged data).
  if (!flags.rename.empty()) {
    cohort::Status st = run->SetName(flags.rename);
    if (st.ok()) st = run->SetTags({flags.rename});
    if (!st.ok()) std::fprintf(stderr, "cohort rename: %s\n", st.ToString().c_str());
  }

  // 3. Log. Log() only appends to memory: a background thread ships batches to the agent.
  //    Reusing one Values vector avoids allocating per step.
  cohort::Values values;
  for (int k = 0; k < flags.keys; ++k) values.emplace_back("metric_" + std::to_string(k), 0.0);
  if (!values.empty()) values[0].first = "loss";
  for (int step = 0; step < flags.steps; ++step) {
    for (int k = 0; k < flags.keys; ++k) {
      values[size_t(k)].second = std::exp(-step / 100.0) * (k + 1) + 0.001 * (step % 7);
    }
    run->Log(values);  // one row at step `step`, then the step advances
    if (step % 100 == 0) std::printf("step %d loss %.4f\n", step, values[0].second);
    if (flags.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.sleep_ms));
  }

  // 4. Summaries and config updates are JSON objects merged into the run.
  (void)run->UpdateSummary(R"({"final_loss": )" + std::to_string(values[0].second) + "}");

  // 5. Finish: flushes what is pending and reports the exit code (bounded by finish_timeout_s).
  cohort::Status st = run->Finish(flags.exit_code);
  if (!st.ok()) std::fprintf(stderr, "cohort finish: %s\n", st.ToString().c_str());
  std::printf("done: %s\n", run->url().c_str());
  return flags.exit_code;
}
