// Series chunk benchmarks: encode/decode throughput and bytes per point for realistic training
// curves, ingest through the tail layout (series/tail.h), and history queries (10M points -> 1,000
// buckets; one key's 100k raw points) over an in-memory chunk store.
//
//   cmake -S . -B build -G Ninja -DCOHORT_BUILD_BENCH=ON && ninja -C build series_bench
//   build/bench/series_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Curves (1M points each): steps 0, 1, 2, ...; times every 100 ms plus 0-4 ms of jitter; values:
//   loss_f32       float(2 exp(-step / 200000) + 0.5 + N(0, 0.02))
//   lr_cosine_*    1e-3 * (1 + cos(pi step / n)) / 2, as float32 and as double
//   epoch_int      step / 5000;  global_step: step
//   gpu_temp_int   an integer random walk in [40, 85] that moves by 1 on 5% of the steps
// Counters: bytes_per_point (everything in the chunk bytes; summaries are stored apart),
// items_per_second (points), chunks_decoded (of the query's chunks, the rest use summaries).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "series/chunk.h"
#include "series/query.h"
#include "series/tail.h"

namespace cohort::series {
namespace {

constexpr int64_t kCurvePoints = 1 << 20;  // 1,024 chunks per curve
constexpr double kPi = 3.14159265358979323846;

enum CurveKind { kLossF32, kLrCosineF32, kLrCosineF64, kEpoch, kGlobalStep, kGpuTemp, kCurveCount };
const char* const kCurveNames[] = {"loss_f32",  "lr_cosine_f32", "lr_cosine_f64",
                                   "epoch_int", "global_step",   "gpu_temp_int"};

std::vector<Point> MakeCurve(int curve, int64_t n) {
  std::mt19937_64 rng(1234 + uint64_t(curve));
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_int_distribution<int> jitter(0, 4);
  std::vector<Point> pts(static_cast<size_t>(n));
  int64_t t = 1700000000000;
  double temp = 60;
  for (int64_t i = 0; i < n; ++i) {
    Point& p = pts[size_t(i)];
    p.step = i;
    p.time_ms = t + 100 * i + jitter(rng);
    const double x = double(i);
    const double cosine = 1e-3 * 0.5 * (1 + std::cos(kPi * x / double(n)));
    switch (curve) {
      case kLossF32:
        p.value = double(float(2.0 * std::exp(-x / 200000.0) + 0.5 + 0.02 * noise(rng)));
        break;
      case kLrCosineF32:
        p.value = double(float(cosine));
        break;
      case kLrCosineF64:
        p.value = cosine;
        break;
      case kEpoch:
        p.value = double(i / 5000);
        break;
      case kGlobalStep:
        p.value = x;
        break;
      default:
        if (rng() % 20 == 0) temp = std::min(85.0, std::max(40.0, temp + (rng() % 2 ? 1 : -1)));
        p.value = temp;
        break;
    }
  }
  return pts;
}

const std::vector<Point>& Curve(int curve) {
  static std::map<int, std::vector<Point>> cache;
  auto it = cache.find(curve);
  if (it == cache.end()) it = cache.emplace(curve, MakeCurve(curve, kCurvePoints)).first;
  return it->second;
}

std::vector<std::string> EncodeChunks(const std::vector<Point>& pts) {
  std::vector<std::string> chunks;
  ChunkEncoder e;
  for (const Point& p : pts) {
    e.Append(p.step, p.time_ms, p.value);
    if (e.full()) {
      chunks.push_back(e.Encode());
      e = ChunkEncoder();
    }
  }
  if (e.count() > 0) chunks.push_back(e.Encode());
  return chunks;
}

// Append every point, Encode every full chunk: points/s and bytes per point.
void BM_Encode(benchmark::State& state) {
  const int curve = int(state.range(0));
  const auto& pts = Curve(curve);
  size_t bytes = 0;
  for (auto _ : state) {
    auto chunks = EncodeChunks(pts);
    bytes = 0;
    for (const auto& c : chunks) bytes += c.size();
    benchmark::DoNotOptimize(chunks.data());
  }
  state.SetLabel(kCurveNames[curve]);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(pts.size()));
  state.counters["bytes_per_point"] = double(bytes) / double(pts.size());
}
BENCHMARK(BM_Encode)->DenseRange(0, kCurveCount - 1)->Unit(benchmark::kMillisecond);

// The realistic mix: every curve above, in equal numbers of points.
void BM_EncodeMix(benchmark::State& state) {
  size_t bytes = 0, points = 0;
  for (auto _ : state) {
    bytes = points = 0;
    for (int c = 0; c < kCurveCount; ++c) {
      auto chunks = EncodeChunks(Curve(c));
      for (const auto& ch : chunks) bytes += ch.size();
      points += Curve(c).size();
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(points));
  state.counters["bytes_per_point"] = double(bytes) / double(points);
}
BENCHMARK(BM_EncodeMix)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const int curve = int(state.range(0));
  const auto chunks = EncodeChunks(Curve(curve));
  ChunkIterator it;
  for (auto _ : state) {
    for (const auto& c : chunks) {
      if (!it.Reset(c).ok()) state.SkipWithError("decode failed");
      benchmark::DoNotOptimize(it.points().data());
    }
  }
  state.SetLabel(kCurveNames[curve]);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(Curve(curve).size()));
}
BENCHMARK(BM_Decode)->DenseRange(0, kCurveCount - 1)->Unit(benchmark::kMillisecond);

// Decoding and then stepping through every point with the iterator (a reader's whole cost).
void BM_DecodeAndStep(benchmark::State& state) {
  const auto chunks = EncodeChunks(Curve(kLossF32));
  ChunkIterator it;
  for (auto _ : state) {
    double sum = 0;
    for (const auto& c : chunks) {
      if (!it.Reset(c).ok()) state.SkipWithError("decode failed");
      while (it.Next()) sum += it.At().value;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(Curve(kLossF32).size()));
}
BENCHMARK(BM_DecodeAndStep)->Unit(benchmark::kMillisecond);

// Ingest as a store does it (series/tail.h): batches of `range(0)` points, each appended as a
// tail chunk; when the tail is due, its chunks are decoded and compacted with the batch.
void BM_AppendBatches(benchmark::State& state) {
  const size_t batch = size_t(state.range(0));
  const auto& all = Curve(kLossF32);
  const std::vector<Point> pts(all.begin(), all.begin() + 64 * kMaxChunkPoints);
  for (auto _ : state) {
    TailState tail_state;
    std::map<int64_t, std::string> chunks;  // index -> encoded chunk
    std::vector<Point> tail;
    for (size_t i = 0; i < pts.size(); i += batch) {
      const std::vector<Point> b(pts.begin() + long(i),
                                 pts.begin() + long(std::min(pts.size(), i + batch)));
      const bool compact = TailNeedsCompaction(tail_state, b.size());
      if (compact) {
        tail.clear();
        for (auto it = chunks.lower_bound(tail_state.tail_idx); it != chunks.end(); ++it) {
          auto decoded = DecodeChunk(it->second);
          if (!decoded.ok()) state.SkipWithError("decode failed");
          tail.insert(tail.end(), decoded->begin(), decoded->end());
        }
      }
      auto plan = PlanTailAppend(&tail_state, b, compact ? &tail : nullptr);
      if (!plan.ok()) state.SkipWithError("append failed");
      chunks.erase(chunks.lower_bound(plan->delete_lo), chunks.lower_bound(plan->delete_hi));
      for (ChunkWrite& w : plan->chunks) chunks[w.index] = std::move(w.data);
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(pts.size()));
}
BENCHMARK(BM_AppendBatches)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

struct MemStore {
  std::vector<ChunkMeta> metas;
  std::vector<std::string> data;
  ChunkLoader Loader() const {
    return [this](int64_t id) -> Result<std::string> { return data[size_t(id)]; };
  }
};

// A store of `pts` in chunks of `per_chunk` points (at most kMaxChunkPoints), as a backend holds
// its sealed chunks of consecutive steps when per_chunk == kMaxChunkPoints.
MemStore BuildStoreChunked(const std::vector<Point>& pts, size_t per_chunk) {
  MemStore m;
  ChunkEncoder e;
  auto flush = [&] {
    m.metas.push_back({int64_t(m.data.size()), e.summary()});
    m.data.push_back(e.Encode());
    e = ChunkEncoder();
  };
  for (const Point& p : pts) {
    e.Append(p.step, p.time_ms, p.value);
    if (size_t(e.count()) == per_chunk) flush();
  }
  if (e.count() > 0) flush();
  return m;
}

// 10M points of a float32 loss curve -> range(0) buckets (target: 1,000 in <= 20 ms), with
// range(1) points per chunk.
void BM_QueryBuckets10M(benchmark::State& state) {
  static std::map<int64_t, MemStore> stores;
  const int64_t per_chunk = state.range(1);
  if (!stores.count(per_chunk)) {
    stores[per_chunk] = BuildStoreChunked(MakeCurve(kLossF32, 10'000'000), size_t(per_chunk));
  }
  const MemStore& m = stores[per_chunk];
  SeriesQuery q;
  q.buckets = int(state.range(0));
  int64_t loads = 0;
  for (auto _ : state) {
    SeriesResult out;
    int64_t n_loads = 0;
    auto loader = [&](int64_t id) -> Result<std::string> {
      ++n_loads;
      return m.data[size_t(id)];
    };
    if (!QuerySeries(m.metas, loader, q, &out).ok()) state.SkipWithError("query failed");
    benchmark::DoNotOptimize(out.buckets.data());
    loads = n_loads;
  }
  size_t bytes = 0;
  for (const auto& d : m.data) bytes += d.size();
  state.counters["chunks"] = double(m.metas.size());
  state.counters["chunks_decoded"] = double(loads);
  state.counters["bytes_per_point"] = double(bytes) / 1e7;
}
BENCHMARK(BM_QueryBuckets10M)
    ->Args({1000, kMaxChunkPoints})
    ->Args({100, kMaxChunkPoints})
    ->Args({1000, kMaxChunkPoints / 2})
    ->Unit(benchmark::kMillisecond);

// One key's 100k points, raw (target <= 20 ms).
void BM_QueryRaw100k(benchmark::State& state) {
  const auto& all = Curve(kLossF32);
  static const MemStore m = BuildStoreChunked({all.begin(), all.begin() + 100000}, kMaxChunkPoints);
  SeriesQuery q;
  q.limit = 100000;
  for (auto _ : state) {
    SeriesResult out;
    if (!QuerySeries(m.metas, m.Loader(), q, &out).ok()) state.SkipWithError("query failed");
    benchmark::DoNotOptimize(out.points.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * 100000);
}
BENCHMARK(BM_QueryRaw100k)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::series

BENCHMARK_MAIN();
