// fleet_load: a fleet of agents against one running `cohort server` (docs/reliability.md,
// "Limits and load"; driven by bench/fleet_load.sh).
//
//   fleet_load --url URL --key KEY [--agents 10000] [--heartbeat-s 10] [--runs 1000]
//              [--log-hz 1] [--user-keys 5] [--system-keys 10] [--chart-points 1000000]
//              [--buckets 1000] [--idle-s 10] [--agents-only-s 20] [--load-s 60]
//              [--warmup-s 10] [--server-pid PID] [--project fleet] [--trace-file PATH]
//
// Set-up: one "chart" run with one series of --chart-points points; --runs logging runs with
// one writer each; heartbeat writers for --agents agents (100 per run). Then three phases, with
// a chart query (history of the chart series in --buckets buckets) issued back to back on its
// own connection throughout:
//   idle         nothing else connected;
//   agents       --agents keep-alive connections, each POSTing its writer's heartbeat every
//                --heartbeat-s (random phase);
//   load         the agents plus --runs connections, each POSTing one ingest batch per 1/--log-hz
//                seconds on a fixed schedule (random phase; a logger behind sends what is due at
//                once): one history row of --user-keys values and one system row of
//                --system-keys values (system metrics). Ingest latency counts from the time
//                a batch was due.
// Prints one JSON object: per phase the chart-query p50/p99, heartbeat and ingest p50/p99 (also
// "steady_*": requests started after the phase's first --warmup-s seconds),
// errors, the server's RSS (max) and CPU (cores busy) read from /proc/PID. --trace-file also
// writes every request of the phases as "kind start_ms latency_ms status" (kind i: ingest,
// h: heartbeat, c: chart), to see when slow requests started.
//
// One io_context on one thread, one coroutine per connection (the load generator must be
// cheaper than the server it loads).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);

struct Args {
  std::string host = "127.0.0.1", port = "8787", key, project = "fleet";
  int agents = 10000, runs = 1000, user_keys = 5, system_keys = 10, buckets = 1000;
  double heartbeat_s = 10, log_hz = 1, idle_s = 10, agents_only_s = 20, load_s = 60;
  double warmup_s = 10;
  int64_t chart_points = 1000000;
  int server_pid = 0;
  std::string trace_file;  // one line per request: kind, start (ms since the run began), ms
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--url") {
      std::string rest = v.substr(v.find("://") == std::string::npos ? 0 : v.find("://") + 3);
      size_t colon = rest.rfind(':');
      a->host = rest.substr(0, colon);
      a->port = rest.substr(colon + 1);
      while (!a->port.empty() && a->port.back() == '/') a->port.pop_back();
    } else if (k == "--key")
      a->key = v;
    else if (k == "--project")
      a->project = v;
    else if (k == "--agents")
      a->agents = std::stoi(v);
    else if (k == "--runs")
      a->runs = std::stoi(v);
    else if (k == "--user-keys")
      a->user_keys = std::stoi(v);
    else if (k == "--system-keys")
      a->system_keys = std::stoi(v);
    else if (k == "--buckets")
      a->buckets = std::stoi(v);
    else if (k == "--heartbeat-s")
      a->heartbeat_s = std::stod(v);
    else if (k == "--log-hz")
      a->log_hz = std::stod(v);
    else if (k == "--idle-s")
      a->idle_s = std::stod(v);
    else if (k == "--agents-only-s")
      a->agents_only_s = std::stod(v);
    else if (k == "--load-s")
      a->load_s = std::stod(v);
    else if (k == "--warmup-s")
      a->warmup_s = std::stod(v);
    else if (k == "--chart-points")
      a->chart_points = std::stoll(v);
    else if (k == "--server-pid")
      a->server_pid = std::stoi(v);
    else if (k == "--trace-file")
      a->trace_file = v;
    else {
      std::fprintf(stderr, "fleet_load: unknown flag %s\n", k.c_str());
      return false;
    }
  }
  if (a->key.empty()) {
    std::fprintf(stderr, "fleet_load: --key is required\n");
    return false;
  }
  return true;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

// Server process numbers from /proc.
struct ProcSample {
  double cpu_s = 0;  // user + system seconds
  double rss_mb = 0;
};

ProcSample ReadProc(int pid) {
  ProcSample s;
  if (pid <= 0) return s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream in(text.substr(close + 2));
    std::string field;
    std::vector<std::string> f;
    while (in >> field) f.push_back(field);
    // After the command: state(0) ... utime(11) stime(12).
    if (f.size() > 12) {
      double ticks = double(sysconf(_SC_CLK_TCK));
      s.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    }
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_mb = std::stod(line.substr(6)) / 1024.0;
  }
  return s;
}

// What one phase collected.
struct PhaseStats {
  std::vector<double> chart_ms, heartbeat_ms, ingest_ms;
  // Requests that started after the phase's first --warmup-s seconds: the steady state, without
  // the backlog of 1,000 loggers starting within one second (and creating their series).
  std::vector<double> heartbeat_steady_ms, ingest_steady_ms;
  int64_t errors = 0, non_2xx = 0;
  std::map<int, int64_t> statuses;
  double rss_max_mb = 0;
  double cpu_cores = 0;
  double self_cpu_cores = 0;       // the load generator's own CPU
  double store_ingest_ms = 0;      // mean store time per ingest batch (server's /metrics)
  double server_ingest_ms = 0;     // mean server time per ingest request (parse to answer)
  double server_heartbeat_ms = 0;  // the same for heartbeats
  double seconds = 0;
};

struct Shared {
  Args args;
  std::string entity;
  std::atomic<int> phase{0};  // index into stats
  Clock::time_point phase_start = Clock::now();
  bool stop_agents = false, stop_loggers = false, stop_chart = false;
  PhaseStats stats[3];
  int connected_agents = 0, connected_loggers = 0;
  int64_t points_sent = 0;
  Clock::time_point run_start = Clock::now();
  // --trace-file: (kind, start ms since run_start, latency ms, status) of every request.
  struct TraceEntry {
    char kind;
    float start_ms, ms;
    int status;
  };
  std::vector<TraceEntry> trace;
};

// One keep-alive HTTP/1.1 connection.
class Conn {
 public:
  Conn(asio::any_io_executor ex, Shared* sh) : stream_(ex), sh_(sh) {}

  asio::awaitable<bool> Connect() {
    tcp::resolver resolver(stream_.get_executor());
    auto [ec, results] = co_await resolver.async_resolve(sh_->args.host, sh_->args.port, kUseTuple);
    if (ec) co_return false;
    stream_.expires_after(std::chrono::seconds(30));
    auto [cec, ep] = co_await stream_.async_connect(results, kUseTuple);
    stream_.expires_never();
    if (!cec) {
      beast::error_code ignored;
      stream_.socket().set_option(tcp::no_delay(true), ignored);
    }
    co_return !cec;
  }

  // Sends one request; status 0 on a connection error (then reconnects once and retries).
  asio::awaitable<int> Call(bhttp::verb method, const std::string& target, std::string body,
                            std::string* out = nullptr) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      bhttp::request<bhttp::string_body> req{method, target, 11};
      req.set(bhttp::field::host, sh_->args.host);
      req.set(bhttp::field::authorization, "Bearer " + sh_->args.key);
      req.keep_alive(true);
      if (!body.empty() || method == bhttp::verb::post) {
        req.set(bhttp::field::content_type, "application/json");
        req.body() = body;
        req.prepare_payload();
      }
      stream_.expires_after(std::chrono::seconds(60));
      auto [wec, wn] = co_await bhttp::async_write(stream_, req, kUseTuple);
      bhttp::response<bhttp::string_body> res;
      beast::error_code rec;
      if (!wec) {
        auto [ec2, rn] = co_await bhttp::async_read(stream_, buffer_, res, kUseTuple);
        rec = ec2;
      }
      stream_.expires_never();
      if (!wec && !rec) {
        if (out) *out = std::move(res.body());
        co_return int(res.result_int());
      }
      beast::error_code ignored;
      stream_.socket().close(ignored);
      buffer_.clear();
      if (attempt == 0 && !(co_await Connect())) break;
    }
    co_return 0;
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

 private:
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  Shared* sh_;
};

void Record(Shared* sh, int status, std::vector<double> PhaseStats::*which, double ms,
            Clock::time_point started, std::vector<double> PhaseStats::*steady = nullptr) {
  PhaseStats& st = sh->stats[sh->phase.load()];
  if (!sh->args.trace_file.empty()) {
    char kind = which == &PhaseStats::ingest_ms      ? 'i'
                : which == &PhaseStats::heartbeat_ms ? 'h'
                                                     : 'c';
    sh->trace.push_back({kind, float(Ms(started - sh->run_start)), float(ms), status});
  }
  if (steady && status >= 200 && status < 300 &&
      started - sh->phase_start >= std::chrono::duration<double>(sh->args.warmup_s)) {
    (st.*steady).push_back(ms);
  }
  if (status == 0) {
    ++st.errors;
    return;
  }
  ++st.statuses[status];
  if (status < 200 || status >= 300) {
    ++st.non_2xx;
    return;
  }
  (st.*which).push_back(ms);
}

std::string RunsPath(const Shared& sh) {
  return "/api/v1/runs/" + sh.entity + "/" + sh.args.project;
}

asio::awaitable<void> SleepFor(double seconds) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  t.expires_after(std::chrono::microseconds(int64_t(seconds * 1e6)));
  co_await t.async_wait(kUseTuple);
}

// Runs `jobs` (each a request on a shared pool of `width` connections) and waits for all.
asio::awaitable<bool> SetupCalls(Shared* sh, std::vector<std::pair<std::string, std::string>> jobs,
                                 int width) {
  auto ex = co_await asio::this_coro::executor;
  size_t next = 0;
  int running = 0;
  bool ok = true;
  asio::steady_timer done(ex, Clock::time_point::max());
  for (int w = 0; w < width; ++w) {
    ++running;
    asio::co_spawn(
        ex,
        [&]() -> asio::awaitable<void> {
          Conn c(ex, sh);
          if (!(co_await c.Connect())) ok = false;
          while (ok && next < jobs.size()) {
            auto& job = jobs[next++];
            int status = co_await c.Call(bhttp::verb::post, job.first, job.second);
            if (status < 200 || status >= 300) {
              std::fprintf(stderr, "fleet_load: set-up POST %s: status %d\n", job.first.c_str(),
                           status);
              ok = false;
            }
          }
          c.Close();
          if (--running == 0) done.cancel();
        },
        asio::detached);
  }
  co_await done.async_wait(kUseTuple);
  co_return ok;
}

std::string HistoryBatch(int64_t seq, int64_t step, int64_t t0, int64_t rows) {
  std::string b = "{\"seq\":" + std::to_string(seq) + ",\"history\":[";
  for (int64_t i = 0; i < rows; ++i) {
    if (i) b += ',';
    int64_t s = step + i;
    b += "{\"step\":" + std::to_string(s) + ",\"time\":" + std::to_string(t0 + s) +
         ",\"values\":{\"loss\":" + std::to_string(1.0 / double(1 + s) + 0.001 * double(s % 7)) +
         "}}";
  }
  return b + "]}";
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

asio::awaitable<void> Agent(Shared* sh, int index, std::mt19937_64 rng) {
  auto ex = co_await asio::this_coro::executor;
  Conn c(ex, sh);
  if (!(co_await c.Connect())) {
    ++sh->stats[sh->phase.load()].errors;
    co_return;
  }
  ++sh->connected_agents;
  std::string target = RunsPath(*sh) + "/hb-" + std::to_string(index / 100) + "/writers/a" +
                       std::to_string(index) + "/heartbeat";
  std::uniform_real_distribution<double> phase(0, sh->args.heartbeat_s);
  co_await SleepFor(phase(rng));
  while (!sh->stop_agents) {
    auto t0 = Clock::now();
    int status = co_await c.Call(bhttp::verb::post, target, "{}");
    Record(sh, status, &PhaseStats::heartbeat_ms, Ms(Clock::now() - t0), t0,
           &PhaseStats::heartbeat_steady_ms);
    double left = sh->args.heartbeat_s - std::chrono::duration<double>(Clock::now() - t0).count();
    if (left > 0) co_await SleepFor(left);
  }
  c.Close();
  --sh->connected_agents;
}

asio::awaitable<void> Logger(Shared* sh, int index, std::mt19937_64 rng) {
  auto ex = co_await asio::this_coro::executor;
  Conn c(ex, sh);
  if (!(co_await c.Connect())) {
    ++sh->stats[sh->phase.load()].errors;
    co_return;
  }
  ++sh->connected_loggers;
  std::string target = RunsPath(*sh) + "/log-" + std::to_string(index) + "/writers/rank_0/batches";
  double period = 1.0 / sh->args.log_hz;
  std::uniform_real_distribution<double> phase(0, period);
  std::uniform_real_distribution<double> noise(0, 1);
  co_await SleepFor(phase(rng));
  // A fixed schedule, as a training process logs on its own clock: batch k is due at
  // start + k * period whatever the server did before. A logger that fell behind sends what is
  // due back to back, then returns to its own phase (no convoy of loggers in step after a
  // stall). Latency counts from the time a batch was due, so waiting to send counts too.
  const auto period_d =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period));
  auto due = Clock::now();
  int64_t seq = 0;
  while (!sh->stop_loggers) {
    const auto t0 = due;
    due += period_d;
    ++seq;
    int64_t now = NowMs();
    std::string body = "{\"seq\":" + std::to_string(seq) +
                       ",\"history\":[{\"step\":" + std::to_string(seq - 1) +
                       ",\"time\":" + std::to_string(now) + ",\"values\":{";
    for (int k = 0; k < sh->args.user_keys; ++k) {
      if (k) body += ',';
      body += "\"metric_" + std::to_string(k) + "\":" + std::to_string(noise(rng));
    }
    body += "}}],\"system\":[{\"time\":" + std::to_string(now) + ",\"values\":{";
    for (int k = 0; k < sh->args.system_keys; ++k) {
      if (k) body += ',';
      body += "\"gpu." + std::to_string(k) + ".util\":" + std::to_string(int(noise(rng) * 100));
    }
    body += "}}]}";
    int status = co_await c.Call(bhttp::verb::post, target, std::move(body));
    Record(sh, status, &PhaseStats::ingest_ms, Ms(Clock::now() - t0), t0,
           &PhaseStats::ingest_steady_ms);
    if (status >= 200 && status < 300) sh->points_sent += sh->args.user_keys + sh->args.system_keys;
    const double left = std::chrono::duration<double>(due - Clock::now()).count();
    if (left > 0) co_await SleepFor(left);
  }
  c.Close();
  --sh->connected_loggers;
}

asio::awaitable<void> Charts(Shared* sh) {
  auto ex = co_await asio::this_coro::executor;
  Conn c(ex, sh);
  if (!(co_await c.Connect())) co_return;
  std::string target =
      RunsPath(*sh) + "/chart/history?keys=loss&buckets=" + std::to_string(sh->args.buckets);
  while (!sh->stop_chart) {
    auto t0 = Clock::now();
    std::string body;
    int status = co_await c.Call(bhttp::verb::get, target, "", &body);
    Record(sh, status, &PhaseStats::chart_ms, Ms(Clock::now() - t0), t0);
    co_await SleepFor(0.05);  // ~20 chart loads per second at most
  }
  c.Close();
}

// Samples the server's RSS every 0.5 s into the current phase.
asio::awaitable<void> Sampler(Shared* sh, bool* stop) {
  while (!*stop) {
    ProcSample p = ReadProc(sh->args.server_pid);
    PhaseStats& st = sh->stats[sh->phase.load()];
    st.rss_max_mb = std::max(st.rss_max_mb, p.rss_mb);
    co_await SleepFor(0.5);
  }
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Sum and count of one series of a latency histogram in the server's /metrics text.
std::pair<double, double> HistSumCount(const std::string& metrics, const std::string& name,
                                       const std::string& label) {
  auto value = [&](const std::string& suffix) {
    std::string needle = name + suffix + "{" + label + "} ";
    size_t at = metrics.find(needle);
    return at == std::string::npos ? 0.0 : std::atof(metrics.c_str() + at + needle.size());
  };
  return {value("_sum"), value("_count")};
}

asio::awaitable<int> Main(Shared* sh) {
  auto ex = co_await asio::this_coro::executor;
  const Args& a = sh->args;
  {
    Conn c(ex, sh);
    if (!(co_await c.Connect())) {
      std::fprintf(stderr, "fleet_load: cannot connect to %s:%s\n", a.host.c_str(), a.port.c_str());
      co_return 1;
    }
    std::string body;
    int status = co_await c.Call(bhttp::verb::get, "/api/v1/viewer", "", &body);
    size_t at = body.find("\"entity\":\"");
    if (status != 200 || at == std::string::npos) {
      std::fprintf(stderr, "fleet_load: /api/v1/viewer answered %d %s\n", status, body.c_str());
      co_return 1;
    }
    at += 10;
    sh->entity = body.substr(at, body.find('"', at) - at);
    c.Close();
  }
  auto t_setup = Clock::now();
  // The chart series.
  std::vector<std::pair<std::string, std::string>> jobs;
  jobs.emplace_back(RunsPath(*sh), "{\"id\":\"chart\"}");
  jobs.emplace_back(RunsPath(*sh) + "/chart/writers", "{\"label\":\"w\"}");
  if (!(co_await SetupCalls(sh, std::move(jobs), 1))) co_return 1;
  jobs.clear();
  const int64_t kRows = 20000;
  int64_t t0 = NowMs() - a.chart_points;
  for (int64_t s = 0, seq = 1; s < a.chart_points; s += kRows, ++seq) {
    jobs.emplace_back(RunsPath(*sh) + "/chart/writers/w/batches",
                      HistoryBatch(seq, s, t0, std::min(kRows, a.chart_points - s)));
  }
  if (!(co_await SetupCalls(sh, std::move(jobs), 1))) co_return 1;
  jobs.clear();
  // Runs: logging runs, then the runs that hold the agents' heartbeat writers.
  int hb_runs = (a.agents + 99) / 100;
  for (int i = 0; i < a.runs; ++i) {
    jobs.emplace_back(RunsPath(*sh), "{\"id\":\"log-" + std::to_string(i) + "\"}");
  }
  for (int i = 0; i < hb_runs; ++i) {
    jobs.emplace_back(RunsPath(*sh), "{\"id\":\"hb-" + std::to_string(i) + "\"}");
  }
  if (!(co_await SetupCalls(sh, std::move(jobs), 8))) co_return 1;
  jobs.clear();
  for (int i = 0; i < a.runs; ++i) {
    jobs.emplace_back(RunsPath(*sh) + "/log-" + std::to_string(i) + "/writers",
                      "{\"label\":\"rank_0\"}");
  }
  for (int i = 0; i < a.agents; ++i) {
    jobs.emplace_back(RunsPath(*sh) + "/hb-" + std::to_string(i / 100) + "/writers",
                      "{\"label\":\"a" + std::to_string(i) + "\"}");
  }
  if (!(co_await SetupCalls(sh, std::move(jobs), 8))) co_return 1;
  double setup_s = std::chrono::duration<double>(Clock::now() - t_setup).count();
  std::fprintf(stderr, "fleet_load: set-up done in %.1f s\n", setup_s);

  bool stop_sampler = false;
  asio::co_spawn(ex, Sampler(sh, &stop_sampler), asio::detached);
  Conn metrics_conn(ex, sh);
  if (!(co_await metrics_conn.Connect())) co_return 1;
  auto scrape = [&]() -> asio::awaitable<std::string> {
    std::string text;
    co_await metrics_conn.Call(bhttp::verb::get, "/metrics", "", &text);
    co_return text;
  };
  auto phase = [&](int index, double seconds) -> asio::awaitable<void> {
    sh->phase = index;
    sh->phase_start = Clock::now();
    ProcSample p0 = ReadProc(a.server_pid);
    double self0 = SelfCpuSeconds();
    std::string m0 = co_await scrape();
    auto start = Clock::now();
    co_await SleepFor(seconds);
    ProcSample p1 = ReadProc(a.server_pid);
    std::string m1 = co_await scrape();
    PhaseStats& st = sh->stats[index];
    st.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    st.cpu_cores = (p1.cpu_s - p0.cpu_s) / st.seconds;
    st.self_cpu_cores = (SelfCpuSeconds() - self0) / st.seconds;
    auto mean_ms = [&](const std::string& name, const std::string& label) {
      auto [s0, c0] = HistSumCount(m0, name, label);
      auto [s1, c1] = HistSumCount(m1, name, label);
      return c1 > c0 ? (s1 - s0) / (c1 - c0) * 1000.0 : 0.0;
    };
    const std::string store = "cohort_store_operation_duration_seconds";
    const std::string route = "cohort_http_request_duration_seconds";
    const std::string runs = "route=\"/api/v1/runs/{entity}/{project}/{run}/writers/{label}/";
    st.store_ingest_ms = mean_ms(store, "op=\"ingest\"");
    st.server_ingest_ms = mean_ms(route, runs + "batches\"");
    st.server_heartbeat_ms = mean_ms(route, runs + "heartbeat\"");
  };
  std::mt19937_64 rng(42);
  asio::co_spawn(ex, Charts(sh), asio::detached);
  co_await phase(0, a.idle_s);
  // Connect the agents in waves so that the listen backlog is not overrun.
  sh->phase = 1;
  for (int i = 0; i < a.agents; ++i) {
    asio::co_spawn(ex, Agent(sh, i, std::mt19937_64(rng())), asio::detached);
    if (i % 500 == 499) co_await SleepFor(0.05);
  }
  for (int i = 0; i < 200 && sh->connected_agents < a.agents; ++i) co_await SleepFor(0.1);
  std::fprintf(stderr, "fleet_load: %d agents connected\n", sh->connected_agents);
  int agents_connected = sh->connected_agents;
  sh->stats[1] = PhaseStats{};  // measure from here on
  co_await phase(1, a.agents_only_s);
  sh->phase = 2;
  for (int i = 0; i < a.runs; ++i) {
    asio::co_spawn(ex, Logger(sh, i, std::mt19937_64(rng())), asio::detached);
  }
  for (int i = 0; i < 100 && sh->connected_loggers < a.runs; ++i) co_await SleepFor(0.1);
  int loggers_connected = sh->connected_loggers;
  int64_t points_before = sh->points_sent;
  co_await phase(2, a.load_s);
  int64_t points = sh->points_sent - points_before;
  sh->stop_chart = sh->stop_loggers = sh->stop_agents = true;
  stop_sampler = true;
  int open_at_end = sh->connected_agents;

  auto phase_json = [&](const char* name, const PhaseStats& st) {
    char buf[2048];
    std::snprintf(buf, sizeof(buf),
                  "\"%s\":{\"seconds\":%.1f,\"chart_queries\":%zu,\"chart_p50_ms\":%.2f,"
                  "\"chart_p99_ms\":%.2f,\"heartbeats\":%zu,\"heartbeat_p50_ms\":%.2f,"
                  "\"heartbeat_p99_ms\":%.2f,\"ingest_batches\":%zu,\"ingest_p50_ms\":%.2f,"
                  "\"ingest_p99_ms\":%.2f,\"steady_heartbeat_p50_ms\":%.2f,"
                  "\"steady_heartbeat_p99_ms\":%.2f,\"steady_ingest_p50_ms\":%.2f,"
                  "\"steady_ingest_p99_ms\":%.2f,\"errors\":%lld,\"non_2xx\":%lld,"
                  "\"server_rss_max_mb\":%.1f,\"server_cpu_cores\":%.3f,"
                  "\"loadgen_cpu_cores\":%.3f,\"store_ingest_mean_ms\":%.3f,"
                  "\"server_ingest_mean_ms\":%.3f,\"server_heartbeat_mean_ms\":%.3f}",
                  name, st.seconds, st.chart_ms.size(), Pct(st.chart_ms, 0.5),
                  Pct(st.chart_ms, 0.99), st.heartbeat_ms.size(), Pct(st.heartbeat_ms, 0.5),
                  Pct(st.heartbeat_ms, 0.99), st.ingest_ms.size(), Pct(st.ingest_ms, 0.5),
                  Pct(st.ingest_ms, 0.99), Pct(st.heartbeat_steady_ms, 0.5),
                  Pct(st.heartbeat_steady_ms, 0.99), Pct(st.ingest_steady_ms, 0.5),
                  Pct(st.ingest_steady_ms, 0.99), (long long)st.errors, (long long)st.non_2xx,
                  st.rss_max_mb, st.cpu_cores, st.self_cpu_cores, st.store_ingest_ms,
                  st.server_ingest_ms, st.server_heartbeat_ms);
    return std::string(buf);
  };
  std::printf(
      "{\"agents\":%d,\"agents_connected\":%d,\"agents_open_at_end\":%d,\"runs\":%d,"
      "\"loggers_connected\":%d,\"heartbeat_s\":%.1f,\"log_hz\":%.1f,\"chart_points\":%lld,"
      "\"buckets\":%d,\"setup_s\":%.1f,\"points_per_s\":%.0f,%s,%s,%s}\n",
      a.agents, agents_connected, open_at_end, a.runs, loggers_connected, a.heartbeat_s, a.log_hz,
      (long long)a.chart_points, a.buckets, setup_s, double(points) / sh->stats[2].seconds,
      phase_json("idle", sh->stats[0]).c_str(), phase_json("agents", sh->stats[1]).c_str(),
      phase_json("load", sh->stats[2]).c_str());
  std::fflush(stdout);
  if (!a.trace_file.empty()) {
    if (FILE* f = std::fopen(a.trace_file.c_str(), "w")) {
      for (const auto& e : sh->trace) {
        std::fprintf(f, "%c %.1f %.2f %d\n", e.kind, e.start_ms, e.ms, e.status);
      }
      std::fclose(f);
    }
  }
  bool failed = agents_connected < a.agents || loggers_connected < a.runs;
  for (const auto& st : sh->stats) failed = failed || st.errors > 0 || st.non_2xx > 0;
  co_return failed ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Shared sh;
  if (!ParseArgs(argc, argv, &sh.args)) return 64;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  asio::io_context ioc(1);
  int rc = 1;
  asio::co_spawn(ioc, Main(&sh), [&](std::exception_ptr e, int r) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "fleet_load: %s\n", ex.what());
      }
      r = 1;
    }
    rc = r;
    ioc.stop();
  });
  ioc.run();
  return rc;
}
