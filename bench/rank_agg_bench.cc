// Rank aggregation benchmark (issue 8): one metric across 64 writers x 1M steps each, to 1,000
// buckets, as the /ranks/aggregate route computes it (QuerySeries per member on the common grid,
// then AggregateMembers), against a naive baseline that decodes every point and folds it.
// In memory (chunk bytes in RAM), like BM_QueryBuckets10M in series_bench.cc, and through the
// SQLite store (64M-point databases built once as $COHORT_BENCH_DB-v4-<batch rows>, default
// /tmp/cohort_rank_agg_bench.db-v4-<batch rows>, reused while they hold the expected data).
//
//   ninja -C build-ranks rank_agg_bench
//   build-ranks/bench/rank_agg_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "series/aggregate.h"
#include "series/chunk.h"
#include "series/query.h"
#include "store/store.h"

namespace cohort::series {
namespace {

constexpr int kMembers = 64;
constexpr int64_t kSteps = 1000000;
constexpr int kBuckets = 1000;

struct Member {
  std::vector<ChunkMeta> metas;
  std::vector<std::string> data;
};

// A float32 loss curve per member (steps 0..kSteps-1, 100 ms apart), member-specific noise and
// offset.
std::vector<Point> MemberPoints(int m) {
  std::mt19937_64 rng(99 + uint64_t(m));
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<Point> pts(static_cast<size_t>(kSteps));
  for (int64_t i = 0; i < kSteps; ++i) {
    const double v = 2.0 * std::exp(-double(i) / 200000.0) + 0.5 + 0.01 * m + 0.02 * noise(rng);
    pts[size_t(i)] = {i, 1700000000000 + 100 * i + int64_t(rng() % 5), double(float(v))};
  }
  return pts;
}

// The member's points cut into full chunks as the stores write them.
Member BuildMember(int m) {
  Member out;
  ChunkEncoder e;
  auto flush = [&] {
    out.metas.push_back({int64_t(out.data.size()), e.summary()});
    out.data.push_back(e.Encode());
    e = ChunkEncoder();
  };
  for (const Point& p : MemberPoints(m)) {
    e.Append(p.step, p.time_ms, p.value);
    if (e.full()) flush();
  }
  if (e.count() > 0) flush();
  return out;
}

const std::vector<Member>& Members() {
  static const std::vector<Member> members = [] {
    std::vector<Member> v;
    for (int m = 0; m < kMembers; ++m) v.push_back(BuildMember(m));
    return v;
  }();
  return members;
}

// What the route does, for a given grid.
void Aggregate(benchmark::State& state, const AggregateGrid& grid) {
  const auto& members = Members();
  const std::vector<GridPart> parts = GridParts(grid);
  int64_t loads = 0;
  size_t out_buckets = 0;
  for (auto _ : state) {
    loads = 0;
    std::vector<std::vector<Bucket>> per(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      const Member& mem = members[m];
      auto loader = [&](int64_t id) -> Result<std::string> {
        ++loads;
        return mem.data[size_t(id)];
      };
      for (const GridPart& part : parts) {
        SeriesQuery q;
        q.min_step = part.min_step;
        q.max_step = part.max_step;
        q.buckets = part.buckets;
        SeriesResult d;
        if (!QuerySeries(mem.metas, loader, q, &d).ok()) state.SkipWithError("query failed");
        per[m].insert(per[m].end(), d.buckets.begin(), d.buckets.end());
      }
    }
    auto agg = AggregateMembers(grid, per, false);
    out_buckets = agg.size();
    benchmark::DoNotOptimize(agg.data());
  }
  state.counters["buckets"] = double(out_buckets);
  state.counters["chunks_decoded"] = double(loads);
  state.counters["bucket_width"] = double(grid.width);
  state.SetItemsProcessed(int64_t(state.iterations()) * kMembers * kSteps);
}

// The route's grid: width 1,000 rounded to 1,024, so no chunk straddles a bucket.
void BM_RankAggregate64x1M(benchmark::State& state) {
  Members();
  auto grid = ChooseAggregateGrid(0, kSteps - 1, kBuckets, kMaxChunkPoints);
  if (!grid.ok()) return state.SkipWithError("grid");
  Aggregate(state, *grid);
}
BENCHMARK(BM_RankAggregate64x1M)->Unit(benchmark::kMillisecond);

// The same fold on the plain history grid (width exactly 1,000): nearly every chunk straddles a
// bucket edge and is decoded. Shows what the chunk-aligned width saves.
void BM_RankAggregate64x1MWidth1000(benchmark::State& state) {
  Members();
  AggregateGrid grid;
  grid.width = 1000;
  grid.first = 0;
  grid.count = kBuckets;
  grid.clip_lo = 0;
  grid.clip_hi = kSteps - 1;
  Aggregate(state, grid);
}
BENCHMARK(BM_RankAggregate64x1MWidth1000)->Unit(benchmark::kMillisecond);

// Baseline: naive per-point aggregation. Decodes every point of every member and folds each into
// its member's bucket, then the same cross-member statistics.
void BM_NaivePerPoint64x1M(benchmark::State& state) {
  const auto& members = Members();
  auto grid = ChooseAggregateGrid(0, kSteps - 1, kBuckets, kMaxChunkPoints);
  if (!grid.ok()) return state.SkipWithError("grid");
  ChunkIterator it;
  for (auto _ : state) {
    std::vector<std::vector<Bucket>> per(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      std::vector<ChunkSummary> acc(size_t(grid->count));
      for (const std::string& c : members[m].data) {
        if (!it.Reset(c).ok()) state.SkipWithError("decode");
        while (it.Next()) {
          const Point& p = it.At();
          acc[size_t(grid->Slot(p.step))].Add(p.step, p.time_ms, p.value);
        }
      }
      for (const ChunkSummary& s : acc) {
        if (s.count == 0) continue;
        Bucket b;
        b.step_min = s.min_step, b.step_max = s.max_step, b.time_min = s.min_time;
        b.time_max = s.max_time, b.count = s.count, b.nan_count = s.nan_count;
        b.min = s.min, b.max = s.max, b.sum = s.sum;
        per[m].push_back(b);
      }
    }
    auto agg = AggregateMembers(*grid, per, false);
    benchmark::DoNotOptimize(agg.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kMembers * kSteps);
}
BENCHMARK(BM_NaivePerPoint64x1M)->Unit(benchmark::kMillisecond);

// ---- through the SQLite store ----

const store::RunRef kRef{"bench", "ranks", "agg64"};

std::string Label(int m) { return "rank_" + std::to_string(m); }

// A database of 64 writers x 1M points ingested in batches of `batch` rows, built on first use.
// The store cuts sealed chunks at multiples of 1,024 steps (series/tail.h, schema version 4), so
// any batch size gives chunks that fit the 1,024-wide grid; databases built by an older layout
// (batches sealed from their own first step) carry another file name and are not reused.
store::Store* SqliteStore(benchmark::State& state, size_t batch) {
  static std::map<size_t, std::unique_ptr<store::Store>> dbs;
  std::unique_ptr<store::Store>& db = dbs[batch];
  if (db) return db.get();
  const char* env = std::getenv("COHORT_BENCH_DB");
  const std::string path = std::string(env && *env ? env : "/tmp/cohort_rank_agg_bench.db") +
                           "-v4-" + std::to_string(batch);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto opened = store::OpenStore("sqlite://" + path);
    if (!opened.ok()) {
      state.SkipWithError(opened.status().message().c_str());
      return nullptr;
    }
    db = std::move(opened).value();
    auto series = db->ListSeries(kRef);
    int64_t points = 0;
    if (series.ok()) {
      for (const auto& s : *series) points += s.count;
    }
    if (series.ok() && series->size() == size_t(kMembers) && points == kMembers * kSteps) {
      return db.get();
    }
    if (attempt == 1) break;
    db.reset();
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    auto fresh = store::OpenStore("sqlite://" + path);
    if (!fresh.ok()) break;
    store::RunUpsert up;
    up.ref = kRef;
    if (!(*fresh)->UpsertRun(up).ok()) break;
    for (int m = 0; m < kMembers; ++m) {
      store::WriterJoin join;
      join.label = Label(m);
      if (!(*fresh)->JoinWriter(kRef, join).ok()) break;
      const auto pts = MemberPoints(m);
      int64_t seq = 0;
      for (size_t i = 0; i < pts.size(); i += batch) {
        store::IngestBatch b;
        b.seq = ++seq;
        for (size_t j = i; j < std::min(pts.size(), i + batch); ++j) {
          b.rows.push_back({pts[j].step, pts[j].time_ms, {{"loss", pts[j].value}}});
        }
        auto r = (*fresh)->Ingest(kRef, Label(m), b, pts[i].time_ms);
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

// What /ranks/aggregate does for a run: list the series for the step range, then one bucketed
// history query per grid part for all writers, then the fold.
void BM_RankAggregateSqlite64x1M(benchmark::State& state) {
  store::Store* db = SqliteStore(state, size_t(state.range(0)));
  if (!db) return;
  size_t out_buckets = 0;
  for (auto _ : state) {
    auto series = db->ListSeries(kRef);
    if (!series.ok()) return state.SkipWithError("list");
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::map<std::string, size_t> index;
    for (const auto& s : *series) {
      lo = std::min(lo, s.min_step);
      hi = std::max(hi, s.max_step);
      index.emplace(s.writer, index.size());
    }
    auto grid = ChooseAggregateGrid(lo, hi, kBuckets, kMaxChunkPoints);
    if (!grid.ok()) return state.SkipWithError("grid");
    std::vector<std::vector<Bucket>> per(index.size());
    for (const GridPart& part : GridParts(*grid)) {
      store::HistoryQuery q;
      q.run = kRef;
      q.keys = {"loss"};
      q.series.min_step = part.min_step;
      q.series.max_step = part.max_step;
      q.series.buckets = part.buckets;
      auto data = db->QueryHistory(q);
      if (!data.ok()) return state.SkipWithError("query");
      for (auto& d : *data) {
        auto& dst = per[index[d.writer]];
        dst.insert(dst.end(), d.buckets.begin(), d.buckets.end());
      }
    }
    auto agg = AggregateMembers(*grid, per, false);
    out_buckets = agg.size();
    benchmark::DoNotOptimize(agg.data());
  }
  state.counters["buckets"] = double(out_buckets);
  state.SetItemsProcessed(int64_t(state.iterations()) * kMembers * kSteps);
}
BENCHMARK(BM_RankAggregateSqlite64x1M)
    ->ArgName("batch_rows")
    ->Arg(8192)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::series

BENCHMARK_MAIN();
