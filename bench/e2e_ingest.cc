// End-to-end ingest benchmark (DESIGN.md section 4: "ingest, client -> agent -> server ->
// SQLite, durable >= 5 M points/s"): N C++ client processes each log K keys x S steps through
// the real node agent to a real `cohort server` on SQLite, which this program starts on a free
// port (temporary HOME, its own agent socket, as bench/client_bench.cc).
//
//   ninja -C build e2e_ingest cohort
//   build/bench/e2e_ingest [--reps 3] [--steps-total 400000] [--keys 10] [--rules 100]
//
// --rules N (issue 16, "Rule evaluation cost on the ingest path"): each repetition runs twice,
// interleaved, into two projects: one without alert rules (its default rules deleted) and one
// with N rules (its two defaults, then metric_threshold rules over the logged keys that never
// fire: the cost of evaluating, not of raising); the medians of both and the server's CPU ratio
// are printed.
//
// Scenarios: 1 client; 4 clients, each its own run; 4 writers of one shared run. A repetition
// starts the clients, lets each Init (not timed), then releases them at once; the time runs from
// that release (the first Log) until the last client's Finish returned, which waits until the
// server has acknowledged every point (durable: committed to SQLite). The stored count is then
// checked through the HTTP API (points stored == points logged, or the program fails).
// Per process CPU (utime + stime): clients (wait4), the agent and the server (/proc/PID/stat).
// The data travels as batch v2 all the way (the client encodes it once; the agent stores and
// posts those bytes). Prints one line per repetition and medians.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/http_client.h"
#include "bench_server.h"
#include "cohort/cohort.h"
#include "core/json.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using cohort::Result;
using cohort::Status;

std::string g_root;
std::string g_server_url;
pid_t g_server_pid = 0;

int64_t MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// utime + stime of a process, in seconds (0 when it is gone).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / double(sysconf(_SC_CLK_TCK));
}

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
  for (int i = 0; i < 1000 && kill(pid, 0) == 0; ++i) usleep(10000);
}

bool StartServer(const char* binary) {
  g_server_url = cohort::bench::SpawnServer(binary, g_root + "/server-data", &g_server_pid);
  return !g_server_url.empty();
}

// ---- the client process (this binary with --client) ----

// Inits, reports readiness with one byte on fd 1, waits for one byte on fd 0, logs, finishes,
// then writes "points dropped finish_ok" on fd 1.
int ClientMain(const std::string& project, const std::string& run_id, const std::string& label,
               bool shared, bool primary, int64_t steps, int keys) {
  cohort::Settings s;
  s.project = project;
  s.run_id = run_id;
  s.capture_console = false;
  s.stats_sampling_interval_s = 0;
  s.finish_timeout_s = 300;
  s.init_timeout_s = 60;
  s.handle_sigterm = false;
  s.shared = shared;
  s.label = label;
  if (shared) s.primary = primary;
  auto run = cohort::Init(s);
  if (!run.ok()) {
    std::fprintf(stderr, "e2e_ingest client: init: %s\n", run.status().ToString().c_str());
    return 2;
  }
  std::vector<cohort::Point> points;
  for (int k = 0; k < keys; ++k) {
    points.push_back({run->Key("metric_" + std::to_string(k)), 0.0});
  }
  char go = 0;
  if (write(1, "r", 1) != 1 || read(0, &go, 1) != 1) return 3;
  for (int64_t step = 0; step < steps; ++step) {
    for (int k = 0; k < keys; ++k) points[k].value = double(step) * 0.001 + k;
    run->Log(points);
  }
  cohort::Status st = run->Finish();
  std::string report = std::to_string(steps * keys) + " " + std::to_string(run->dropped()) + " " +
                       (st.ok() ? "1" : "0") + "\n";
  if (!st.ok()) std::fprintf(stderr, "e2e_ingest client: finish: %s\n", st.ToString().c_str());
  return write(1, report.data(), report.size()) == ssize_t(report.size()) ? 0 : 4;
}

// ---- the parent ----

struct Child {
  pid_t pid = 0;
  int to = -1;    // its stdin
  int from = -1;  // its stdout
};

Child SpawnClient(const std::string& self, const std::string& project, const std::string& run_id,
                  const std::string& label, bool shared, bool primary, int64_t steps, int keys) {
  int in[2], out[2];
  Child c;
  if (pipe(in) != 0 || pipe(out) != 0) return c;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<std::string> args = {self,
                                   "--client",
                                   project,
                                   run_id,
                                   label,
                                   shared ? "1" : "0",
                                   primary ? "1" : "0",
                                   std::to_string(steps),
                                   std::to_string(keys)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&c.pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) c.pid = 0;
  c.to = in[1];
  c.from = out[0];
  return c;
}

std::string ReadLine(int fd) {
  std::string line;
  char ch;
  while (read(fd, &ch, 1) == 1 && ch != '\n') line.push_back(ch);
  return line;
}

struct Api {
  cohort::agent::HttpClient http;
  std::string key;
  std::string entity;

  Api(const std::string& url, std::string api_key) : http(url), key(std::move(api_key)) {}

  Result<bj::value> Call(const char* method, const std::string& path, const std::string& body) {
    auto r = http.Request(method, path, body, key);
    if (!r.ok()) return r.status();
    if (r->status / 100 != 2) {
      return Status::Internal(std::string(method) + " " + path + ": HTTP " +
                              std::to_string(r->status) + " " + r->body);
    }
    return cohort::json::Parse(r->body);
  }
  Result<bj::value> Get(const std::string& path) { return Call("GET", path, ""); }
};

// Gives `project` exactly `rules` alert rules: none (its defaults deleted), or its two defaults
// and metric_threshold rules over the logged keys (metric_0.. and globs of them) whose
// thresholds no value reaches.
Status SetRules(Api* api, const std::string& project, int rules, int keys) {
  const std::string base = "/api/v1/alert-rules/" + api->entity + "/" + project;
  auto listed = api->Get(base);  // creates the defaults
  if (!listed.ok()) return listed.status();
  const auto& have = listed->as_object().at("rules").as_array();
  if (rules == 0) {
    for (const auto& r : have) {
      auto del = api->Call("DELETE", base + "/" + std::to_string(r.as_object().at("id").to_number<int64_t>()), "");
      if (!del.ok()) return del.status();
    }
    return Status::Ok();
  }
  for (int i = int(have.size()); i < rules; ++i) {
    const std::string key =
        i % 4 == 3 ? "metric_*" : "metric_" + std::to_string(i % std::max(keys, 1));
    bj::object spec{{"key", key}, {"op", i % 2 ? "<" : ">"}, {"value", i % 2 ? -1e12 : 1e12}};
    bj::object rule{{"name", "bench rule " + std::to_string(i)}, {"kind", "metric_threshold"},
                    {"spec", spec}, {"level", "WARN"}, {"enabled", true}};
    auto made = api->Call("POST", base, bj::serialize(rule));
    if (!made.ok()) return made.status();
  }
  return Status::Ok();
}

// Points of user keys stored for `run_id`, summed over writers.
int64_t StoredPoints(Api* api, const std::string& project, const std::string& run_id) {
  auto v = api->Get("/api/v1/runs/" + api->entity + "/" + project + "/" + run_id + "/keys");
  if (!v.ok() || !v->is_object()) return -1;
  int64_t n = 0;
  for (const auto& k : v->as_object().at("keys").as_array()) {
    const auto& o = k.as_object();
    if (std::string_view(o.at("key").as_string()).starts_with("system/")) continue;
    n += o.at("count").to_number<int64_t>();
  }
  return n;
}

struct Sample {
  double wall_s = 0;
  double points_per_s = 0;
  double client_cpu_s = 0, agent_cpu_s = 0, server_cpu_s = 0;
  int64_t points = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Sample RunOnce(const std::string& self, Api* api, const std::string& project, int clients,
               bool shared, int64_t steps, int keys, int rep) {
  static int serial = 0;
  std::vector<std::string> run_ids;
  std::vector<Child> children;
  for (int i = 0; i < clients; ++i) {
    std::string run_id =
        shared ? "shared" + std::to_string(serial) : "r" + std::to_string(serial++);
    if (!shared || i == 0) run_ids.push_back(run_id);
    children.push_back(
        SpawnClient(self, project, run_id, "w" + std::to_string(i), shared, i == 0, steps, keys));
  }
  if (shared) ++serial;
  for (auto& c : children) {
    char r = 0;
    if (c.pid == 0 || read(c.from, &r, 1) != 1 || r != 'r') {
      std::fprintf(stderr, "e2e_ingest: a client failed to start\n");
      std::exit(1);
    }
  }
  const int agent = AgentPid();
  const double agent0 = agent ? ProcessCpuSeconds(agent) : 0;
  const double server0 = ProcessCpuSeconds(g_server_pid);
  const int64_t t0 = MonoNanos();
  for (auto& c : children) (void)!write(c.to, "g", 1);
  Sample s;
  int64_t logged = 0;
  for (auto& c : children) {
    std::string report = ReadLine(c.from);
    int64_t points = 0, dropped = 0;
    int ok = 0;
    std::sscanf(report.c_str(), "%ld %ld %d", &points, &dropped, &ok);
    if (!ok || dropped != 0) {
      std::fprintf(stderr, "e2e_ingest: client report '%s' (finish failed or values dropped)\n",
                   report.c_str());
      std::exit(1);
    }
    logged += points;
  }
  const int64_t t1 = MonoNanos();
  for (auto& c : children) {
    int status = 0;
    rusage ru{};
    wait4(c.pid, &status, 0, &ru);
    s.client_cpu_s += double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                      double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    close(c.to);
    close(c.from);
  }
  s.agent_cpu_s = agent ? ProcessCpuSeconds(agent) - agent0 : 0;
  s.server_cpu_s = ProcessCpuSeconds(g_server_pid) - server0;
  s.wall_s = double(t1 - t0) / 1e9;
  s.points = logged;
  s.points_per_s = double(logged) / s.wall_s;
  int64_t stored = 0;
  for (const auto& id : run_ids) stored += StoredPoints(api, project, id);
  if (stored != logged) {
    std::fprintf(stderr, "e2e_ingest: stored %ld points, logged %ld\n", long(stored), long(logged));
    std::exit(1);
  }
  std::printf(
      "  %s rep %d: %ld points in %.3f s = %.2fM points/s; CPU s: clients %.2f, agent %.2f, server "
      "%.2f (stored == logged)\n",
      project.c_str(), rep, long(logged), s.wall_s, s.points_per_s / 1e6, s.client_cpu_s, s.agent_cpu_s,
      s.server_cpu_s);
  std::fflush(stdout);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--client") {
    if (argc != 9) return 64;
    return ClientMain(argv[2], argv[3], argv[4], std::string(argv[5]) == "1",
                      std::string(argv[6]) == "1", std::atoll(argv[7]), std::atoi(argv[8]));
  }
  int reps = 3, keys = 10, rules = -1;
  int64_t total_steps = 400000;  // per scenario: steps x keys points in all (4M at 10 keys)
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--keys")
      keys = std::atoi(argv[i + 1]);
    else if (a == "--steps-total")
      total_steps = std::atoll(argv[i + 1]);
    else if (a == "--rules")
      rules = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: e2e_ingest [--reps N] [--keys K] [--steps-total S] [--rules N]\n");
      return 64;
    }
  }
  const std::string self = fs::canonical("/proc/self/exe").string();
  char tmpl[] = "/tmp/cohort-e2e-bench-XXXXXX";
  g_root = mkdtemp(tmpl);
  setenv("HOME", g_root.c_str(), 1);
  setenv("XDG_RUNTIME_DIR", (g_root + "/run").c_str(), 1);
  fs::create_directories(g_root + "/run");
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("XDG_DATA_HOME");
  for (const char* v :
       {"COHORT_BASE_URL", "COHORT_API_KEY", "COHORT_ENTITY", "COHORT_PROJECT", "COHORT_RUN_ID",
        "COHORT_MODE", "COHORT_AGENT", "COHORT_DIR", "RANK"}) {
    unsetenv(v);
  }
  setenv("COHORT_AGENT_SOCKET", (g_root + "/sock/agent.sock").c_str(), 1);
  setenv("COHORT_AGENT_IDLE_S", "120", 1);
  const char* bin = getenv("COHORT_BIN") != nullptr ? getenv("COHORT_BIN") : COHORT_BENCH_CLI_BIN;
  setenv("COHORT_BIN", bin, 1);
  if (!StartServer(bin)) {
    std::fprintf(stderr, "e2e_ingest: could not start `%s server`\n", bin);
    return 1;
  }
  std::string key;
  {
    std::ifstream in(g_root + "/.config/cohort/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto v = cohort::json::Parse(text);
    if (v.ok() && v->is_object()) key = std::string(v->as_object().at("api_key").as_string());
  }
  Api api(g_server_url, key);
  auto me = api.Get("/api/v1/viewer");
  if (!me.ok()) {
    std::fprintf(stderr, "e2e_ingest: viewer: %s\n", me.status().ToString().c_str());
    return 1;
  }
  api.entity = std::string(me->as_object().at("entity").as_string());
  std::printf("e2e_ingest: server %s, %d keys, %ld steps x keys per scenario, %d reps\n",
              g_server_url.c_str(), keys, long(total_steps), reps);

  struct Scenario {
    const char* name;
    int clients;
    bool shared;
  };
  const Scenario scenarios[] = {{"1 client", 1, false},
                                {"4 clients, 4 runs", 4, false},
                                {"4 writers, 1 shared run", 4, true}};
  // The projects each repetition logs into, in turn: one, or (--rules) without and with rules.
  std::vector<std::pair<std::string, int>> projects = {{"e2e-bench", -1}};
  if (rules >= 0) projects = {{"e2e-norules", 0}, {"e2e-rules", rules}};
  for (const auto& [project, n] : projects) {
    if (n < 0) continue;
    Status st = SetRules(&api, project, n, keys);
    if (!st.ok()) {
      std::fprintf(stderr, "e2e_ingest: rules of %s: %s\n", project.c_str(), st.ToString().c_str());
      return 1;
    }
  }
  std::vector<std::string> summary;
  const std::string format = "batch v2";
  for (const Scenario& sc : scenarios) {
    std::printf("%s:\n", sc.name);
    struct Medians {
      std::vector<double> rate, wall, client, agent, server;
    };
    std::vector<Medians> per(projects.size());
    for (int rep = 0; rep < reps; ++rep) {
      // Alternating which project goes first: the second of a pair finds a bigger database.
      for (size_t n = 0; n < projects.size(); ++n) {
        const size_t p = rep % 2 ? projects.size() - 1 - n : n;
        Sample s = RunOnce(self, &api, projects[p].first, sc.clients, sc.shared,
                           total_steps / sc.clients, keys, rep);
        per[p].rate.push_back(s.points_per_s);
        per[p].wall.push_back(s.wall_s);
        const double us = 1e6 / double(s.points);
        per[p].client.push_back(s.client_cpu_s * us);
        per[p].agent.push_back(s.agent_cpu_s * us);
        per[p].server.push_back(s.server_cpu_s * us);
      }
    }
    for (size_t p = 0; p < projects.size(); ++p) {
      const Medians& m = per[p];
      const std::string what =
          projects[p].second < 0 ? format : std::to_string(projects[p].second) + " rules";
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %s | %.2fM | %.3f s | %.3f / %.3f / %.3f |",
                    what.c_str(), sc.name, Median(m.rate) / 1e6, Median(m.wall), Median(m.client),
                    Median(m.agent), Median(m.server));
      summary.push_back(line);
    }
    if (projects.size() == 2) {
      char line[256];
      std::snprintf(line, sizeof line, "|   server CPU with / without rules | %s | %.3f |", sc.name,
                    Median(per[1].server) / Median(per[0].server));
      summary.push_back(line);
    }
  }
  std::printf(
      "\nmedians: | format | scenario | points/s | wall | CPU us/point: clients / agent / "
      "server |\n");
  for (const auto& l : summary) std::printf("%s\n", l.c_str());
  StopAgent();
  kill(g_server_pid, SIGTERM);
  waitpid(g_server_pid, nullptr, 0);
  std::error_code ec;
  fs::remove_all(g_root, ec);
  return 0;
}
