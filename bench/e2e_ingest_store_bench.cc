// The SQLite store's share of end-to-end ingest (docs/benchmarks.md, "End to end"): one
// Store::Ingest call per iteration of what the client library flushes under sustained load and
// the agent uploads as one batch, 6,554 rows x 10 keys (65,540 points, implicit steps, the
// same keys in the same order in every row) appended to one series set of one writer, with
// synchronous=NORMAL as `cohort server` runs it. Measures the store alone: no HTTP, no decoding.
// Reports points/s (CPU time of the calling thread, which does the whole call: grouping, chunk
// encoding, the transaction and its commit). A fresh database under $COHORT_BENCH_DIR
// (default /tmp) per run.
//
//   ninja -C build e2e_ingest_store_bench
//   build/bench/e2e_ingest_store_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace cohort::store {
namespace {

constexpr int kRows = 6554;
constexpr int kKeys = 10;

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

IngestBatch Batch(int64_t seq) {
  IngestBatch b{.seq = seq};
  b.rows.reserve(kRows);
  for (int r = 0; r < kRows; ++r) {
    HistoryRow row{.step = -1, .time_ms = 1700000000000 + seq * kRows + r};
    for (int k = 0; k < kKeys; ++k) {
      row.values.emplace_back("train/metric_" + std::to_string(k), double(r) * 0.001 + k);
    }
    b.rows.push_back(std::move(row));
  }
  return b;
}

void BM_IngestAgentBatch(benchmark::State& state) {
  const char* env = std::getenv("COHORT_BENCH_DIR");
  const std::string path =
      std::string(env && *env ? env : "/tmp") + "/cohort_e2e_ingest_store_bench.db";
  Remove(path);
  auto store = SqliteStore::Open(SqliteOptions{.path = path});
  if (!store.ok()) return state.SkipWithError(store.status().ToString().c_str());
  const RunRef ref{"bench", "e2e", "run1"};
  if (!(*store)->UpsertRun(RunUpsert{.ref = ref}).ok() ||
      !(*store)->JoinWriter(ref, WriterJoin{.label = "rank_0"}).ok()) {
    return state.SkipWithError("run setup failed");
  }
  // Batches are built before the timed loop: the store, not the batch's construction, is timed.
  std::vector<IngestBatch> batches;
  for (int64_t seq = 1; seq <= 64; ++seq) batches.push_back(Batch(seq));
  size_t i = 0;
  int64_t points = 0;
  for (auto _ : state) {
    if (i == batches.size()) {
      state.PauseTiming();
      for (IngestBatch& b : batches) b.seq += int64_t(batches.size());
      i = 0;
      state.ResumeTiming();
    }
    auto r = (*store)->Ingest(ref, "rank_0", batches[i++], 1);
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    if (r->duplicate) return state.SkipWithError("duplicate batch");
    points += r->points;
  }
  state.counters["points/s"] = benchmark::Counter(double(points), benchmark::Counter::kIsRate);
  store->reset();
  Remove(path);
}
BENCHMARK(BM_IngestAgentBatch)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace cohort::store

BENCHMARK_MAIN();
