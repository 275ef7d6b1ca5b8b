// SQLite store read benchmarks (the read path of issues 5 and 8, below HTTP):
//   - console index of a 1,000,000-line log (4 writers, 2% stderr) with a label, stream or text
//     filter: what GET .../console/index asks the store (Store::IndexConsole);
//   - the first page of the same filters (Store::QueryConsole, 1,000 lines);
//   - a raw read of 1,000,000 points of one series (Store::QueryHistory, one page).
// The database is built once as $COHORT_BENCH_DB-read (default /tmp/cohort_store_read_bench.db-
// read) and reused while it holds the expected data.
//
//   ninja -C build store_read_bench
//   build/bench/store_read_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "store/store.h"

namespace cohort::store {
namespace {

constexpr int kWriters = 4;
constexpr int64_t kLines = 1000000;
constexpr int64_t kPoints = 1000000;
const RunRef kRef{"bench", "read", "log1m"};

std::string Label(int w) { return "rank_" + std::to_string(w); }

// Line i of the log: written by writer i % 4; every 50th on stderr.
std::string LineText(int64_t i) {
  return "step " + std::to_string(i / kWriters) + " loss=0." + std::to_string(i % 997) +
         (i % 50 == 0 ? " warning: slow collective" : " lr=3e-4 tokens/s=81234");
}

Store* Db(benchmark::State& state) {
  static std::unique_ptr<Store> db;
  if (db) return db.get();
  const char* env = std::getenv("COHORT_BENCH_DB");
  const std::string path =
      std::string(env && *env ? env : "/tmp/cohort_store_read_bench.db") + "-read";
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto opened = OpenStore("sqlite://" + path);
    if (!opened.ok()) {
      state.SkipWithError(opened.status().message().c_str());
      return nullptr;
    }
    db = std::move(opened).value();
    auto idx = db->IndexConsole(ConsoleQuery{.run = kRef}, kLines);
    auto series = db->ListSeries(kRef);
    if (idx.ok() && idx->total == kLines && series.ok() && series->size() == 1 &&
        (*series)[0].count == kPoints) {
      return db.get();
    }
    if (attempt == 1) break;
    db.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    auto fresh = OpenStore("sqlite://" + path);
    if (!fresh.ok()) break;
    if (!(*fresh)->UpsertRun(RunUpsert{.ref = kRef}).ok()) break;
    for (int w = 0; w < kWriters; ++w) {
      if (!(*fresh)->JoinWriter(kRef, WriterJoin{.label = Label(w)}).ok()) break;
    }
    std::vector<int64_t> seq(kWriters, 0);
    constexpr int64_t kBatch = 10000;
    for (int64_t i = 0; i < kLines; i += kBatch) {
      for (int w = 0; w < kWriters; ++w) {
        IngestBatch b{.seq = ++seq[size_t(w)]};
        for (int64_t j = i + w; j < i + kBatch; j += kWriters) {
          b.console.push_back(ConsoleLine{
              .time_ms = j, .stream = j % 50 == 0 ? "stderr" : "stdout", .text = LineText(j)});
        }
        if (w == 0) {  // the metric: 10,000 points per batch, 1M in all
          for (int64_t s = i; s < i + kBatch; ++s) {
            b.rows.push_back(HistoryRow{.step = s,
                                        .time_ms = 1700000000000 + 100 * s,
                                        .values = {{"loss", 1.0 / (s + 1)}}});
          }
        }
        auto r = (*fresh)->Ingest(kRef, Label(w), b, 1);
        if (!r.ok()) {
          state.SkipWithError(r.status().message().c_str());
          return nullptr;
        }
      }
    }
  }
  if (!db) state.SkipWithError("could not build the database");
  return db.get();
}

ConsoleQuery Filter(int which) {
  switch (which) {
    case 0:
      return ConsoleQuery{.run = kRef};
    case 1:
      return ConsoleQuery{.run = kRef, .labels = {"rank_1"}};
    case 2:
      return ConsoleQuery{.run = kRef, .stream = "stderr"};
    case 3:
      return ConsoleQuery{.run = kRef, .text = "step 12"};
    default:
      return ConsoleQuery{.run = kRef, .text = "7"};  // short: no trigram index
  }
}

const char* kFilterNames[] = {"all", "label", "stderr", "text", "text_short"};

void BM_ConsoleIndex(benchmark::State& state) {
  Store* db = Db(state);
  if (!db) return;
  const ConsoleQuery q = Filter(int(state.range(0)));
  int64_t total = 0;
  for (auto _ : state) {
    auto idx = db->IndexConsole(q, 1000);
    if (!idx.ok()) return state.SkipWithError(idx.status().message().c_str());
    total = idx->total;
  }
  state.SetLabel(kFilterNames[state.range(0)]);
  state.counters["lines"] = double(total);
}
BENCHMARK(BM_ConsoleIndex)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

void BM_ConsoleFirstPage(benchmark::State& state) {
  Store* db = Db(state);
  if (!db) return;
  ConsoleQuery q = Filter(int(state.range(0)));
  q.limit = 1000;
  size_t n = 0;
  for (auto _ : state) {
    auto lines = db->QueryConsole(q);
    if (!lines.ok()) return state.SkipWithError(lines.status().message().c_str());
    n = lines->size();
  }
  state.SetLabel(kFilterNames[state.range(0)]);
  state.counters["lines"] = double(n);
}
BENCHMARK(BM_ConsoleFirstPage)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

void BM_RawRead1M(benchmark::State& state) {
  Store* db = Db(state);
  if (!db) return;
  HistoryQuery q{.run = kRef, .keys = {"loss"}, .series = {.limit = kPoints}};
  size_t n = 0;
  for (auto _ : state) {
    auto data = db->QueryHistory(q);
    if (!data.ok() || data->size() != 1) return state.SkipWithError("query");
    n = (*data)[0].points.size();
  }
  state.counters["points"] = double(n);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_RawRead1M)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::store

BENCHMARK_MAIN();
