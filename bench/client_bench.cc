// C++ client benchmarks (DESIGN.md section 4): Run::Log per call (1, 10, 100 keys; string keys
// and interned KeyIds; under contention), Init with the agent running and cold, and Finish
// after 1M points, against a `cohort server` this program starts on a free port (temporary
// HOME, its own agent socket). Baseline in the same run: a memcpy of the same cells into a
// buffer (DESIGN.md's reference point).
//
//   ninja -C build client_bench cohort
//   build/bench/client_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Every Log benchmark logs into a fresh online run (agent -> server -> SQLite) started before
// its timed loop and finished after it, with a fixed number of calls so that the run's
// in-memory buffer never reaches its cap (the `dropped` counter must be 0). The per-call
// benchmarks (`*PerCall`) time each call with clock_gettime minus the timer's own median cost
// and report p50/p99 as counters (ns).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_server.h"
#include "client/log_buffer.h"
#include "cohort/cohort.h"

namespace {

namespace fs = std::filesystem;

std::string g_root;        // temporary HOME
std::string g_server_url;  // the started server
pid_t g_server_pid = 0;

int64_t MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

cohort::Settings BenchSettings() {
  cohort::Settings s;
  s.project = "client-bench";
  s.capture_console = false;
  s.stats_sampling_interval_s = 0;
  s.finish_timeout_s = 120;
  s.handle_sigterm = false;
  return s;
}

cohort::Run MustInit(benchmark::State& state, const cohort::Settings& s = BenchSettings()) {
  auto run = cohort::Init(s);
  if (!run.ok()) {
    state.SkipWithError(("init: " + run.status().ToString()).c_str());
    return cohort::Run();
  }
  return std::move(*run);
}

cohort::Values MakeValues(int keys) {
  cohort::Values v;
  for (int k = 0; k < keys; ++k) v.emplace_back("metric_" + std::to_string(k), 0.1 * k);
  return v;
}

std::vector<cohort::Point> MakePoints(cohort::Run& run, int keys) {
  std::vector<cohort::Point> p;
  for (int k = 0; k < keys; ++k) p.push_back({run.Key("metric_" + std::to_string(k)), 0.1 * k});
  return p;
}

// Calls per benchmark run: about 2M cells, well under the buffer's cap of 8M.
int64_t CallsFor(int keys) { return std::max<int64_t>(20000, 2000000 / keys); }

void FinishAndCount(benchmark::State& state, cohort::Run& run) {
  state.counters["dropped"] = double(run.dropped());
  if (run.dropped() != 0) state.SkipWithError("values were dropped: the numbers are not valid");
  (void)run.Finish();
}

// ---- baseline ----

struct Cell {
  uint32_t key;
  double value;
};

void BM_MemcpyBaseline(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  std::vector<Cell> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = {uint32_t(i), 0.1 * double(i)};
  std::vector<Cell> buf(1 << 20);
  size_t at = 0;
  for (auto _ : state) {
    if (at + n > buf.size()) at = 0;
    std::memcpy(buf.data() + at, src.data(), n * sizeof(Cell));
    at += n;
    benchmark::DoNotOptimize(buf.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MemcpyBaseline)->Arg(1)->Arg(10)->Arg(100);

// ---- the buffer alone (no flush thread, no I/O): the floor of Run::Log ----

// Arg 0: string keys (Values), arg 1: interned KeyIds. Take() every 6,000 calls, untimed.
void BM_LogBufferOnly(benchmark::State& state) {
  cohort::client::LogBuffer buf;
  const cohort::Values values = MakeValues(10);
  std::vector<cohort::Point> points;
  for (int k = 0; k < 10; ++k) {
    points.push_back({cohort::KeyId{buf.Intern("metric_" + std::to_string(k))}, 0.1 * k});
  }
  cohort::batch::Batch batch;
  int64_t n = 0;
  for (auto _ : state) {
    if (++n % 6000 == 0) {
      state.PauseTiming();
      buf.Take(&batch);
      state.ResumeTiming();
    }
    if (state.range(0) == 1) {
      buf.Log(points, std::nullopt, true);
    } else {
      buf.Log(values, std::nullopt, true);
    }
  }
}
BENCHMARK(BM_LogBufferOnly)->Arg(0)->Arg(1);

// ---- Run::Log ----

void BM_LogValues(benchmark::State& state) {
  const int keys = int(state.range(0));
  cohort::Run run = MustInit(state);
  const cohort::Values values = MakeValues(keys);
  for (auto _ : state) run.Log(values);
  FinishAndCount(state, run);
}
BENCHMARK(BM_LogValues)->Arg(1)->Iterations(CallsFor(1));
BENCHMARK(BM_LogValues)->Arg(10)->Iterations(CallsFor(10));
BENCHMARK(BM_LogValues)->Arg(100)->Iterations(CallsFor(100));

void BM_LogPoints(benchmark::State& state) {
  const int keys = int(state.range(0));
  cohort::Run run = MustInit(state);
  const std::vector<cohort::Point> points = MakePoints(run, keys);
  for (auto _ : state) run.Log(points);
  FinishAndCount(state, run);
}
BENCHMARK(BM_LogPoints)->Arg(1)->Iterations(CallsFor(1));
BENCHMARK(BM_LogPoints)->Arg(10)->Iterations(CallsFor(10));
BENCHMARK(BM_LogPoints)->Arg(100)->Iterations(CallsFor(100));

// What most code writes: the map built in the call (10 short keys, SSO strings, one vector).
void BM_LogValuesBuiltPerCall(benchmark::State& state) {
  cohort::Run run = MustInit(state);
  double x = 0;
  for (auto _ : state) {
    x += 1e-3;
    run.Log({{"loss", x},
             {"acc", x},
             {"lr", x},
             {"grad_norm", x},
             {"epoch", x},
             {"tokens", x},
             {"val_loss", x},
             {"val_acc", x},
             {"throughput", x},
             {"mem_gb", x}});
  }
  FinishAndCount(state, run);
}
BENCHMARK(BM_LogValuesBuiltPerCall)->Iterations(CallsFor(10));

// Per-call latency percentiles of 10 keys: arg 0 string keys, arg 1 interned KeyIds.
void BM_LogPerCall(benchmark::State& state) {
  const bool interned = state.range(0) == 1;
  cohort::Run run = MustInit(state);
  const cohort::Values values = MakeValues(10);
  const std::vector<cohort::Point> points = MakePoints(run, 10);
  std::vector<int64_t> timer(100000);
  for (auto& t : timer) {
    int64_t t0 = MonoNanos();
    t = MonoNanos() - t0;
  }
  std::nth_element(timer.begin(), timer.begin() + long(timer.size() / 2), timer.end());
  const int64_t overhead = timer[timer.size() / 2];
  std::vector<int64_t> samples;
  samples.reserve(size_t(state.max_iterations));
  for (auto _ : state) {
    int64_t t0 = MonoNanos();
    if (interned) {
      run.Log(points);
    } else {
      run.Log(values);
    }
    samples.push_back(MonoNanos() - t0 - overhead);
  }
  std::sort(samples.begin(), samples.end());
  state.counters["p50_ns"] = double(samples[samples.size() / 2]);
  state.counters["p99_ns"] = double(samples[samples.size() * 99 / 100]);
  state.counters["timer_ns"] = double(overhead);
  FinishAndCount(state, run);
}
BENCHMARK(BM_LogPerCall)->Arg(0)->Arg(1)->Iterations(CallsFor(10));

// Several threads logging 10 keys into one run (one writer).
std::optional<cohort::Run> g_shared_run;

void BM_LogContended(benchmark::State& state) {
  if (state.thread_index() == 0) g_shared_run = MustInit(state);
  const cohort::Values values = MakeValues(10);
  // Threads meet at the loop's start, so the run exists by then.
  for (auto _ : state) g_shared_run->Log(values);
  if (state.thread_index() == 0) {
    FinishAndCount(state, *g_shared_run);
    g_shared_run.reset();
  }
}
BENCHMARK(BM_LogContended)->Threads(1)->Threads(2)->Threads(4)->Iterations(100000);

// ---- Init and Finish ----

int AgentPid() {
  std::ifstream in(g_root + "/sock/agent.lock");
  int pid = 0;
  in >> pid;
  return pid > 0 && kill(pid, 0) == 0 ? pid : 0;
}

void StopAgent() {
  int pid = AgentPid();
  if (pid == 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) usleep(10000);
}

void BM_InitWarm(benchmark::State& state) {
  (void)cohort::Setup(BenchSettings());
  for (auto _ : state) {
    int64_t t0 = MonoNanos();
    cohort::Run run = MustInit(state);
    state.SetIterationTime(double(MonoNanos() - t0) / 1e9);
    (void)run.Finish();
  }
}
BENCHMARK(BM_InitWarm)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

// The same, but the agent is idle when Init comes: 300 ms (untimed) after each Finish, so that
// the previous run's wind-down (its ACK file, seq.json and clean-up fsyncs) does not compete
// with the next Init's fsyncs, as in a training job whose Init follows no Finish.
void BM_InitWarmAgentIdle(benchmark::State& state) {
  (void)cohort::Setup(BenchSettings());
  for (auto _ : state) {
    usleep(300 * 1000);
    int64_t t0 = MonoNanos();
    cohort::Run run = MustInit(state);
    state.SetIterationTime(double(MonoNanos() - t0) / 1e9);
    (void)run.Finish();
  }
}
BENCHMARK(BM_InitWarmAgentIdle)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

void BM_InitCold(benchmark::State& state) {
  for (auto _ : state) {
    StopAgent();
    int64_t t0 = MonoNanos();
    cohort::Run run = MustInit(state);
    state.SetIterationTime(double(MonoNanos() - t0) / 1e9);
    (void)run.Finish();
  }
}
BENCHMARK(BM_InitCold)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

// Finish after 1M points (100k calls of 10 keys), with the agent already running.
void BM_FinishAfter1MPoints(benchmark::State& state) {
  (void)cohort::Setup(BenchSettings());
  double log_s = 0;
  for (auto _ : state) {
    cohort::Run run = MustInit(state);
    const std::vector<cohort::Point> points = MakePoints(run, 10);
    int64_t t0 = MonoNanos();
    for (int i = 0; i < 100000; ++i) run.Log(points);
    int64_t t1 = MonoNanos();
    cohort::Status s = run.Finish();
    int64_t t2 = MonoNanos();
    if (!s.ok()) state.SkipWithError(("finish: " + s.ToString()).c_str());
    state.SetIterationTime(double(t2 - t1) / 1e9);
    log_s += double(t1 - t0) / 1e9;
  }
  state.counters["log_1m_s"] = benchmark::Counter(log_s, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_FinishAfter1MPoints)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

// ---- the server ----

bool StartServer(const char* binary) {
  g_server_url = cohort::bench::SpawnServer(binary, g_root + "/server-data", &g_server_pid);
  return !g_server_url.empty();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // $TMPDIR (default /tmp) holds HOME, hence the agent's WAL and the server's SQLite file: put
  // it on a tmpfs (TMPDIR=/dev/shm) to take fsync latency out of the Init/Finish figures.
  const char* tmpdir = getenv("TMPDIR") != nullptr && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  std::string tmpl = std::string(tmpdir) + "/cohort-client-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "client_bench: mkdtemp in %s failed\n", tmpdir);
    return 1;
  }
  g_root = tmpl;
  setenv("HOME", g_root.c_str(), 1);
  setenv("XDG_RUNTIME_DIR", (g_root + "/run").c_str(), 1);
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("XDG_DATA_HOME");
  for (const char* v : {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_ENTITY", "COHORT_PROJECT",
                        "COHORT_RUN_ID", "COHORT_MODE", "COHORT_AGENT", "COHORT_DIR", "RANK"}) {
    unsetenv(v);
  }
  setenv("COHORT_AGENT_SOCKET", (g_root + "/sock/agent.sock").c_str(), 1);
  setenv("COHORT_AGENT_IDLE_S", "60", 1);
  const char* bin = getenv("COHORT_BIN") != nullptr ? getenv("COHORT_BIN") : COHORT_BENCH_CLI_BIN;
  setenv("COHORT_BIN", bin, 1);
  if (!StartServer(bin)) {
    std::fprintf(stderr, "client_bench: could not start `%s server`\n", bin);
    return 1;
  }
  std::fprintf(stderr, "client_bench: server %s, HOME %s\n", g_server_url.c_str(), g_root.c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  StopAgent();
  kill(g_server_pid, SIGTERM);
  waitpid(g_server_pid, nullptr, 0);
  std::error_code ec;
  if (getenv("COHORT_BENCH_KEEP") == nullptr) {
    fs::remove_all(g_root, ec);
  } else {
    std::fprintf(stderr, "client_bench: kept %s (COHORT_BENCH_KEEP)\n", g_root.c_str());
  }
  return 0;
}
