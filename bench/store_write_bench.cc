// SQLite store write path under the fleet's load (docs/reliability.md, "Limits and load"):
//   - BM_FleetBatch: Store::Ingest of the fleet's batch (one history row of 5 values and one
//     system row of 10 values) by 1,000 writers of 1,000 runs, round robin, from 1, 4, 16 or 64
//     threads, in three modes: "before" (every batch its own transaction, SQLite's checkpoints
//     inside the committing call: the store as it was), "group" (group commit) and
//     "group+bg_ckpt" (group commit and checkpoints on a background thread, the default); with
//     synchronous=NORMAL and FULL. Reports batches/s and the mean batches per transaction.
//   - BM_Heartbeats: 330 writers' heartbeats (10,000 agents every 30 s: one second's worth) as
//     330 Heartbeat calls or one Heartbeats call.
// Each benchmark uses a fresh database file under $COHORT_BENCH_DIR (default /tmp).
//
//   ninja -C build store_write_bench
//   build/bench/store_write_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace cohort::store {
namespace {

constexpr int kRuns = 1000;

std::string DbPath(const std::string& name) {
  const char* env = std::getenv("COHORT_BENCH_DIR");
  return std::string(env && *env ? env : "/tmp") + "/cohort_store_write_bench_" + name + ".db";
}

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// A fresh store with kRuns runs of one writer each ("rank_0") and, for heartbeats, 100 writers
// ("a0".."a99") in each of the first `hb_runs` runs.
std::unique_ptr<SqliteStore> Fresh(const std::string& name, bool group, bool bg_ckpt, bool full,
                                   int hb_runs, std::string* error) {
  SqliteOptions o;
  o.path = DbPath(name);
  o.group_commit = group;
  o.background_checkpoints = bg_ckpt;
  o.synchronous_full = full;
  Remove(o.path);
  auto opened = SqliteStore::Open(o);
  if (!opened.ok()) {
    *error = opened.status().ToString();
    return nullptr;
  }
  std::unique_ptr<SqliteStore> db = std::move(opened).value();
  for (int r = 0; r < kRuns; ++r) {
    RunRef ref{"bench", "fleet", "log-" + std::to_string(r)};
    Status s = db->UpsertRun(RunUpsert{.ref = ref}).status();
    if (s.ok()) s = db->JoinWriter(ref, WriterJoin{.label = "rank_0"}).status();
    for (int a = 0; s.ok() && r < hb_runs && a < 100; ++a) {
      s = db->JoinWriter(ref, WriterJoin{.label = "a" + std::to_string(a)}).status();
    }
    if (!s.ok()) {
      *error = s.ToString();
      return nullptr;
    }
  }
  return db;
}

IngestBatch FleetBatch(int64_t seq, int64_t now) {
  static const std::vector<std::string> kMetrics = [] {
    std::vector<std::string> out;
    for (int k = 0; k < 5; ++k) out.push_back("metric_" + std::to_string(k));
    return out;
  }();
  static const std::vector<std::string> kSystem = [] {
    std::vector<std::string> out;
    for (int k = 0; k < 10; ++k) out.push_back("gpu." + std::to_string(k) + ".util");
    return out;
  }();
  IngestBatchBuilder b(seq);
  std::vector<IngestBatchBuilder::Cell> cells;
  for (int k = 0; k < 5; ++k) cells.emplace_back(kMetrics[size_t(k)], 0.5 + k);
  b.AddHistoryRow(seq - 1, now, cells);
  cells.clear();
  for (int k = 0; k < 10; ++k) cells.emplace_back(kSystem[size_t(k)], k);
  b.AddSystemRow(now, cells);
  return b.Finish();
}

std::unique_ptr<SqliteStore> g_store;
std::atomic<int64_t> g_failed{0};

const char* kModes[] = {"before", "group", "group+bg_ckpt"};

// range(0): mode (kModes); range(1): synchronous FULL (1) or NORMAL (0).
void BM_FleetBatch(benchmark::State& state) {
  const int mode = int(state.range(0));
  const bool group = mode >= 1, bg_ckpt = mode == 2, full = state.range(1) != 0;
  if (state.thread_index() == 0) {
    std::string error;
    g_store = Fresh("fleet", group, bg_ckpt, full, 0, &error);
    g_failed = 0;
    if (!g_store) state.SkipWithError(error.c_str());
  }
  // Thread t writes the runs r with r % threads == t, round robin, seq per run.
  const int threads = state.threads(), t = state.thread_index();
  std::vector<int> mine;
  for (int r = t; r < kRuns; r += threads) mine.push_back(r);
  std::vector<int64_t> seq(kRuns, 0);
  size_t next = 0;
  int64_t now = 1700000000000;
  for (auto _ : state) {
    if (!g_store) break;
    const int r = mine[next++ % mine.size()];
    RunRef ref{"bench", "fleet", "log-" + std::to_string(r)};
    ++now;  // the batch's time and the ingest's clock: one value (not two reads of a ++now)
    auto res = g_store->Ingest(ref, "rank_0", FleetBatch(++seq[size_t(r)], now), now);
    if (!res.ok() || res->duplicate) ++g_failed;
  }
  state.SetItemsProcessed(state.iterations());
  if (t == 0 && g_store) {
    // After the loop's closing barrier: every thread is done with its calls.
    auto c = g_store->group_counters();
    state.counters["batches_per_txn"] =
        c.transactions > 0 ? double(c.calls) / double(c.transactions) : 0;
    state.counters["largest_group"] = double(c.largest_group);
    state.counters["failed"] = double(g_failed.load());
    state.counters["writer_ckpts"] = double(g_store->checkpointer().writer_checkpoints());
    // The write connection's series cache (sqlite_series_cache.h): how often a batch's series
    // row came from memory, and how often the cache was dropped.
    const auto sc = g_store->series_cache_stats();
    state.counters["series_cached_pct"] =
        sc.hits + sc.misses > 0 ? 100.0 * double(sc.hits) / double(sc.hits + sc.misses) : 0;
    state.counters["series_cache_clears"] = double(sc.clears);
    state.SetLabel(std::string(kModes[mode]) + (full ? ",FULL" : ",NORMAL"));
  }
}
BENCHMARK(BM_FleetBatch)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->ThreadRange(1, 64)
    ->RangeMultiplier(4)
    ->UseRealTime()
    ->MinTime(2.0)
    ->Unit(benchmark::kMicrosecond);

// range(0): one Heartbeats call (1) or 330 Heartbeat calls (0).
void BM_Heartbeats(benchmark::State& state) {
  std::string error;
  std::unique_ptr<SqliteStore> db = Fresh("heartbeats", true, true, false, 100, &error);
  if (!db) return state.SkipWithError(error.c_str());
  constexpr int kPerSecond = 330;
  int64_t now = 1700000000000, next = 0;
  for (auto _ : state) {
    std::vector<HeartbeatUpdate> updates;
    ++now;
    for (int i = 0; i < kPerSecond; ++i, ++next) {
      const int64_t w = next % 10000;
      updates.push_back(HeartbeatUpdate{RunRef{"bench", "fleet", "log-" + std::to_string(w / 100)},
                                        "a" + std::to_string(w % 100), now});
    }
    if (state.range(0) == 1) {
      auto n = db->Heartbeats(updates);
      if (!n.ok() || n->updated != kPerSecond) return state.SkipWithError("Heartbeats failed");
    } else {
      for (const HeartbeatUpdate& u : updates) {
        if (!db->Heartbeat(u.ref, u.label, u.now_ms).ok()) {
          return state.SkipWithError("Heartbeat failed");
        }
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * kPerSecond);
  state.SetLabel(state.range(0) == 1 ? "one Heartbeats call" : "330 Heartbeat calls");
}
BENCHMARK(BM_Heartbeats)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::store

BENCHMARK_MAIN();
