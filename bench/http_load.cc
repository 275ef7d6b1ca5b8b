// http_load: load generator for a running `cohort server` (docs/benchmarks.md).
//
//   http_load ingest --url URL --key KEY --clients 4 --batches 200 --rows 100 --keys 10
//       N client threads, each with its own run and writer on one keep-alive connection, send
//       pre-encoded ingest batches; prints points/s and batch latency percentiles as JSON.
//       --format binary sends batch v4 bodies (docs/formats.md, what the agent posts) instead of
//       JSON; --ordered 1 marks each batch Cohort-Batch-Ordered: http-load as the agent does (no
//       exactly-once record per batch; docs/api.md).
//   http_load query --url URL --key KEY --points 1000000 --repeat 20
//       writes one series of N points, then times a raw read of all of it (paged) and a
//       1,000-bucket chart query; prints medians as JSON.
//   http_load sqlite-baseline --points 1000000 --keys 10
//       the same points inserted straight into a SQLite file, a row per point, in one
//       transaction per 1,000 rows x keys: the naive schema Cohort's chunks replace.
//
// Each client thread owns its socket; nothing is shared but the result vectors (joined).
#include <sqlite3.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/batch_format.h"
#include "core/limits.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string mode, url = "http://127.0.0.1:8787", key;
  int clients = 4, batches = 200, rows = 100, keys = 10, repeat = 20;
  int64_t points = 1000000;
  std::string project = "bench";
  std::string format = "json";  // ingest bodies: json | binary (application/vnd.cohort.batch)
  bool ordered = false;         // Cohort-Batch-Ordered: http-load on every batch
};

Args Parse(int argc, char** argv) {
  Args a;
  if (argc > 1) a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--url") a.url = v;
    else if (k == "--key") a.key = v;
    else if (k == "--clients") a.clients = std::stoi(v);
    else if (k == "--batches") a.batches = std::stoi(v);
    else if (k == "--rows") a.rows = std::stoi(v);
    else if (k == "--keys") a.keys = std::stoi(v);
    else if (k == "--repeat") a.repeat = std::stoi(v);
    else if (k == "--points") a.points = std::stoll(v);
    else if (k == "--project") a.project = v;
    else if (k == "--format") a.format = v;
    else if (k == "--ordered") a.ordered = v == "1";
  }
  return a;
}

// One keep-alive HTTP connection.
class Conn {
 public:
  Conn(const std::string& url, std::string key) : stream_(ioc_), key_(std::move(key)) {
    std::string rest = url.substr(url.find("://") + 3);
    host_ = rest.substr(0, rest.find(':'));
    port_ = rest.substr(rest.find(':') + 1);
    if (auto slash = port_.find('/'); slash != std::string::npos) port_ = port_.substr(0, slash);
    asio::ip::tcp::resolver resolver(ioc_);
    stream_.connect(resolver.resolve(host_, port_));
    stream_.socket().set_option(asio::ip::tcp::no_delay(true));
  }

  std::pair<int, std::string> Call(http::verb verb, const std::string& target,
                                   const std::string& body = {},
                                   const char* content_type = "application/json",
                                   int64_t batch_seq = 0, bool ordered = false) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, host_);
    req.set(http::field::authorization, "Bearer " + key_);
    req.set(http::field::content_type, content_type);
    if (batch_seq > 0) req.set(cohort::limits::kBatchSeqHeader, std::to_string(batch_seq));
    if (ordered) req.set(cohort::limits::kBatchOrderedHeader, "http-load");
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    http::write(stream_, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 31);
    http::read(stream_, buf, parser);
    auto res = parser.release();
    return {int(res.result_int()), std::move(res.body())};
  }

 private:
  asio::io_context ioc_;
  beast::tcp_stream stream_;
  std::string host_, port_, key_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
  return v[i];
}

std::string Entity(Conn& c) {
  auto [status, body] = c.Call(http::verb::get, "/api/v1/viewer");
  if (status != 200) {
    std::fprintf(stderr, "viewer: %d %s\n", status, body.c_str());
    std::exit(1);
  }
  return std::string(bj::parse(body).at("entity").as_string());
}

// Creates a run with one writer; returns the batches path.
std::string NewWriter(Conn& c, const Args& a, const std::string& entity, const std::string& name) {
  std::string base = "/api/v1/runs/" + entity + "/" + a.project;
  auto [s1, run] = c.Call(http::verb::post, base, bj::serialize(bj::object{{"name", name}}));
  if (s1 != 201) {
    std::fprintf(stderr, "create run: %d %s\n", s1, run.c_str());
    std::exit(1);
  }
  std::string id(bj::parse(run).at("id").as_string());
  auto [s2, w] = c.Call(http::verb::post, base + "/" + id + "/writers",
                        bj::serialize(bj::object{{"label", "rank_0"}}));
  if (s2 != 201) {
    std::fprintf(stderr, "join: %d %s\n", s2, w.c_str());
    std::exit(1);
  }
  return base + "/" + id + "/writers/rank_0/batches";
}

// A realistic batch: `rows` steps of `keys` float32-valued metrics.
std::string EncodeBatch(int64_t seq, int64_t first_step, int rows, int keys, std::mt19937_64& rng) {
  std::normal_distribution<float> noise(0.f, 0.02f);
  std::string out = "{\"seq\":" + std::to_string(seq) + ",\"history\":[";
  char buf[64];
  for (int r = 0; r < rows; ++r) {
    int64_t step = first_step + r;
    if (r) out += ',';
    out += "{\"step\":" + std::to_string(step) + ",\"time\":" +
           std::to_string(1700000000000 + step * 100) + ",\"values\":{";
    for (int k = 0; k < keys; ++k) {
      float v = float(std::exp(-double(step) / 5000.0) * (1 + k)) + noise(rng);
      std::snprintf(buf, sizeof buf, "%s\"m%d\":%.9g", k ? "," : "", k, double(v));
      out += buf;
    }
    out += "}}";
  }
  out += "]}";
  return out;
}

// The same batch as batch v2 (core/batch_format.h); its seq goes in the Cohort-Batch-Seq header.
std::string EncodeBatchBinary(int64_t first_step, int rows, int keys, std::mt19937_64& rng) {
  std::normal_distribution<float> noise(0.f, 0.02f);
  cohort::batch::Batch b;
  for (int k = 0; k < keys; ++k) b.keys.push_back("m" + std::to_string(k));
  for (int r = 0; r < rows; ++r) {
    int64_t step = first_step + r;
    b.history.push_back({step, 1700000000000 + step * 100, uint32_t(b.cells.size()),
                         uint32_t(keys)});
    for (int k = 0; k < keys; ++k) {
      float v = float(std::exp(-double(step) / 5000.0) * (1 + k)) + noise(rng);
      b.cells.push_back({uint32_t(k), double(v)});
    }
  }
  std::string out;
  cohort::batch::Encode(b, &out);
  return out;
}

int Ingest(const Args& a) {
  const bool binary = a.format == "binary";
  const char* content_type = binary ? "application/vnd.cohort.batch" : "application/json";
  Conn setup(a.url, a.key);
  std::string entity = Entity(setup);
  std::vector<std::string> paths;
  for (int c = 0; c < a.clients; ++c) paths.push_back(NewWriter(setup, a, entity, "load-" + std::to_string(c)));
  // Pre-encode every batch so that the generator measures the server, not itself.
  std::vector<std::vector<std::string>> bodies(a.clients);
  for (int c = 0; c < a.clients; ++c) {
    std::mt19937_64 rng(c);
    for (int b = 0; b < a.batches; ++b) {
      bodies[c].push_back(binary ? EncodeBatchBinary(int64_t(b) * a.rows, a.rows, a.keys, rng)
                                 : EncodeBatch(b + 1, int64_t(b) * a.rows, a.rows, a.keys, rng));
    }
  }
  std::vector<std::vector<double>> lat(a.clients);
  std::vector<int> failures(a.clients, 0);
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c) {
    threads.emplace_back([&, c] {
      Conn conn(a.url, a.key);
      int64_t seq = 0;
      for (const auto& body : bodies[c]) {
        auto s = Clock::now();
        ++seq;
        auto [status, resp] =
            conn.Call(http::verb::post, paths[c], body, content_type, binary ? seq : 0, a.ordered);
        lat[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
        if (status != 200) ++failures[c];
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  int failed = 0;
  for (int c = 0; c < a.clients; ++c) {
    all.insert(all.end(), lat[c].begin(), lat[c].end());
    failed += failures[c];
  }
  double points = double(a.clients) * a.batches * a.rows * a.keys;
  std::printf("{\"format\":\"%s\",\"clients\":%d,\"points\":%.0f,\"seconds\":%.3f,\"points_per_s\":%.0f,"
              "\"batch_ms_p50\":%.3f,\"batch_ms_p99\":%.3f,\"failed\":%d}\n",
              a.format.c_str(), a.clients, points, secs, points / secs, Percentile(all, 0.5), Percentile(all, 0.99),
              failed);
  return failed ? 1 : 0;
}

int Query(const Args& a) {
  Conn c(a.url, a.key);
  std::string entity = Entity(c);
  std::string batches = NewWriter(c, a, entity, "query-bench");
  std::string run_path = batches.substr(0, batches.find("/writers/"));
  std::mt19937_64 rng(1);
  const int rows = 10000;
  for (int64_t start = 0, seq = 1; start < a.points; start += rows, ++seq) {
    auto [s, body] = c.Call(http::verb::post, batches, EncodeBatch(seq, start, rows, 1, rng));
    if (s != 200) {
      std::fprintf(stderr, "ingest: %d %s\n", s, body.c_str());
      return 1;
    }
  }
  std::vector<double> raw_ms, bucket_ms;
  int64_t raw_points = 0;
  for (int r = 0; r < a.repeat; ++r) {
    auto s = Clock::now();
    std::string after;
    raw_points = 0;
    for (;;) {
      auto [st, body] = c.Call(http::verb::get, run_path + "/history?keys=m0&limit=1000000" + after);
      auto v = bj::parse(body);
      auto& series = v.at("series").as_array()[0].as_object();
      auto& pts = series.at("points").as_array();
      raw_points += int64_t(pts.size());
      if (!series.at("more").as_bool()) break;
      after = "&after_step=" + std::to_string(pts.back().as_array()[0].as_int64());
    }
    raw_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    s = Clock::now();
    auto [st2, body2] = c.Call(http::verb::get, run_path + "/history?keys=m0&buckets=1000");
    bucket_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    if (st2 != 200) return 1;
  }
  std::printf("{\"points\":%lld,\"raw_read_ms_p50\":%.2f,\"buckets_1000_ms_p50\":%.2f,"
              "\"buckets_1000_ms_p99\":%.2f}\n",
              static_cast<long long>(raw_points), Percentile(raw_ms, 0.5),
              Percentile(bucket_ms, 0.5), Percentile(bucket_ms, 0.99));
  return raw_points == a.points ? 0 : 1;
}

int SqliteBaseline(const Args& a) {
  auto dir = std::filesystem::temp_directory_path() / ("cohort-baseline-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "baseline.db").string();
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                   "CREATE TABLE points(run INTEGER, key TEXT, step INTEGER, time INTEGER, value REAL);",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO points VALUES(1, ?, ?, ?, ?)", -1, &st, nullptr);
  std::vector<std::string> keys;
  for (int k = 0; k < a.keys; ++k) keys.push_back("m" + std::to_string(k));
  int64_t steps = a.points / a.keys;
  auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; s += 1000) {
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    for (int64_t step = s; step < std::min(steps, s + 1000); ++step) {
      for (int k = 0; k < a.keys; ++k) {
        sqlite3_bind_text(st, 1, keys[k].c_str(), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, step);
        sqlite3_bind_int64(st, 3, 1700000000000 + step * 100);
        sqlite3_bind_double(st, 4, std::exp(-double(step) / 5000.0));
        sqlite3_step(st);
        sqlite3_reset(st);
      }
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  sqlite3_finalize(st);
  sqlite3_close(db);
  auto bytes = std::filesystem::file_size(path);
  std::filesystem::remove_all(dir);
  std::printf("{\"points\":%lld,\"seconds\":%.3f,\"points_per_s\":%.0f,\"bytes_per_point\":%.1f}\n",
              static_cast<long long>(steps * a.keys), secs, double(steps * a.keys) / secs,
              double(bytes) / double(steps * a.keys));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  try {
    if (a.mode == "ingest") return Ingest(a);
    if (a.mode == "query") return Query(a);
    if (a.mode == "sqlite-baseline") return SqliteBaseline(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_load: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: http_load ingest|query|sqlite-baseline [--url U --key K ...]\n");
  return 2;
}
