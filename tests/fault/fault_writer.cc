// A training process for the fault tests (tests/fault): logs values that a test can recompute,
// so that it can check after any fault that every point arrived exactly once and unchanged.
//
//   cohort_fault_writer --writer W --steps N [--keys K] [--sleep-ms MS] [--shared]
//                       [--primary 0|1] [--label L] [--finish-timeout S] [--init-timeout S]
//                       [--summary-every N]
//
// Step s of key "k<j>" carries Value(W, s, j) = W * 1e6 + s * 16 + j (exact in a double). The
// run id comes from COHORT_RUN_ID, the rest of the target from the environment and the config
// file, as for any client. Output (one line each, flushed):
//   run <id> label <label> offline <0|1>
//   logged <steps>                          (every 100 steps)
//   finish <ok|error: ...> <seconds>        (Finish's status and how long it took)
// Exit status 0 when Finish succeeded (everything logged is durable at the agent), 3 when not.
#include <cohort/cohort.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

struct Flags {
  int writer = 0;
  int steps = 100;
  int keys = 4;
  int sleep_ms = 0;
  bool shared = false;
  int primary = -1;  // -1: the default
  std::string label;
  double finish_timeout_s = 30;
  double init_timeout_s = 5;
  int summary_every = 0;  // > 0: a summary update (its own frame, flushed at once) every N steps
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc || (i < argc && !std::strcmp(argv[i], "--shared")); ++i) {
    std::string a = argv[i];
    if (a == "--shared") {
      f.shared = true;
      continue;
    }
    const char* v = argv[++i];
    if (a == "--writer")
      f.writer = std::atoi(v);
    else if (a == "--steps")
      f.steps = std::atoi(v);
    else if (a == "--keys")
      f.keys = std::atoi(v);
    else if (a == "--sleep-ms")
      f.sleep_ms = std::atoi(v);
    else if (a == "--primary")
      f.primary = std::atoi(v);
    else if (a == "--label")
      f.label = v;
    else if (a == "--finish-timeout")
      f.finish_timeout_s = std::atof(v);
    else if (a == "--init-timeout")
      f.init_timeout_s = std::atof(v);
    else if (a == "--summary-every")
      f.summary_every = std::atoi(v);
    else
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
  }
  return f;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  cohort::Settings settings;
  settings.group = "fault";
  settings.job_type = "writer";
  settings.shared = flags.shared;
  settings.label = flags.label;
  if (flags.primary >= 0) settings.primary = flags.primary == 1;
  if (flags.primary == 0) settings.update_finish_state = false;
  settings.stats_sampling_interval_s = 0;
  settings.capture_console = false;
  settings.init_timeout_s = flags.init_timeout_s;
  settings.finish_timeout_s = flags.finish_timeout_s;

  auto run = cohort::Init(settings);
  if (!run.ok()) {
    std::printf("init error: %s\n", run.status().ToString().c_str());
    return 2;
  }
  std::printf("run %s label %s offline %d\n", run->id().c_str(), run->label().c_str(),
              run->offline() ? 1 : 0);
  std::fflush(stdout);

  cohort::Values values;
  for (int k = 0; k < flags.keys; ++k) values.emplace_back("k" + std::to_string(k), 0.0);
  for (int step = 0; step < flags.steps; ++step) {
    for (int k = 0; k < flags.keys; ++k) {
      values[size_t(k)].second = flags.writer * 1e6 + step * 16.0 + k;
    }
    run->Log(values);
    if (flags.summary_every > 0 && (step + 1) % flags.summary_every == 0) {
      cohort::Status st = run->UpdateSummary("{\"summary_step\": " + std::to_string(step) + "}");
      if (!st.ok()) std::printf("summary error: %s\n", st.ToString().c_str());
    }
    if ((step + 1) % 100 == 0) {
      std::printf("logged %d\n", step + 1);
      std::fflush(stdout);
    }
    if (flags.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.sleep_ms));
  }
  auto start = std::chrono::steady_clock::now();
  cohort::Status st = run->Finish(0);
  std::printf("finish %s %.3f\n", st.ok() ? "ok" : ("error: " + st.ToString()).c_str(),
              Seconds(start));
  std::fflush(stdout);
  return st.ok() ? 0 : 3;
}
