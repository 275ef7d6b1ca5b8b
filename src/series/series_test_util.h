// Test helpers for src/series: seeded generators of random and adversarial point sequences, and
// bit-exact comparisons. Test-only; each generator is a plain function of its RNG.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/coding.h"
#include "series/chunk.h"
#include "series/query.h"
#include "series/types.h"

namespace cohort::series::testing {

using Rng = std::mt19937_64;

inline constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

inline double Bits(uint64_t b) { return coding::BitsDouble(b); }
inline uint64_t BitsOf(double d) { return coding::DoubleBits(d); }

// Doubles that codecs get wrong: signed zeros, infinities, NaNs with payloads and signs,
// denormals (double and float32), extremes, integers around 2^53 and float32 boundaries.
inline std::vector<double> SpecialDoubles() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0,
          -0.0,
          inf,
          -inf,
          std::numeric_limits<double>::quiet_NaN(),
          -std::numeric_limits<double>::quiet_NaN(),
          Bits(0x7FF0000000000001ull),  // signalling NaN, payload 1
          Bits(0x7FF8000000000001ull),  // quiet NaN, low payload bit
          Bits(0xFFFFFFFFFFFFFFFFull),
          Bits(0x7FFFFFFFE0000000ull),  // NaN whose payload fits float32
          Bits(0x7FF4000000000000ull),  // signalling NaN whose payload fits float32
          std::numeric_limits<double>::denorm_min(),
          -std::numeric_limits<double>::denorm_min(),
          std::numeric_limits<double>::min(),
          std::numeric_limits<double>::max(),
          std::numeric_limits<double>::lowest(),
          double(std::numeric_limits<float>::denorm_min()),
          -double(std::numeric_limits<float>::denorm_min()),
          double(std::numeric_limits<float>::min()),
          double(std::numeric_limits<float>::max()),
          double(std::numeric_limits<float>::max()) * 2,
          9007199254740992.0,   // 2^53
          -9007199254740992.0,  // -2^53
          9007199254740994.0,   // 2^53 + 2 (integer, beyond the integer mode)
          9007199254740991.0,
          4503599627370495.5,
          1.0,
          -1.0,
          0.1,
          1e-310,
          16777217.0,  // 2^24 + 1: an integer that is not a float32
          0.5};
}

// A random sequence of `n` points from one of several families of steps, times and values
// (chosen by the RNG), including sorted, out-of-order, equal and extreme int64 steps/times, and
// float32, integer, smooth, noisy, special and arbitrary-bit values, sometimes mixed mid-way.
inline std::vector<Point> RandomPoints(Rng& rng, size_t n) {
  std::vector<Point> pts(n);
  auto pick = [&](int k) { return int(rng() % uint64_t(k)); };
  const std::vector<double> specials = SpecialDoubles();
  const int64_t extremes[] = {kMin, kMax, 0, -1, 1, kMin + 1, kMax - 1};
  const int step_kind = pick(8);
  const int time_kind = pick(5);
  const int value_kind = pick(13);
  const int64_t start = int64_t(rng() % 1000000) - 1000;
  const int64_t stride = 1 + pick(20);
  const int64_t t0 = 1700000000000 + int64_t(rng() % 1000000000);
  std::normal_distribution<double> noise(0, 1);
  const size_t mix_at = n ? rng() % n : 0;
  for (size_t i = 0; i < n; ++i) {
    Point& p = pts[i];
    const int64_t ii = int64_t(i);
    switch (step_kind) {
      case 0:
        p.step = start + ii;
        break;
      case 1:
        p.step = start + ii * stride;
        break;
      case 2:
        p.step = int64_t(rng());
        break;
      case 3:
        p.step = extremes[pick(7)];
        break;
      case 4:
        p.step = start;
        break;
      case 5:
        p.step = start - ii * stride;
        break;
      case 6:
        p.step = pick(10) == 0 ? start + int64_t(rng() % 500) - 250 : start + ii;
        break;
      default:
        p.step = kMax - ii;
        break;
    }
    switch (time_kind) {
      case 0:
        p.time_ms = t0 + 100 * ii + pick(7);
        break;
      case 1:
        p.time_ms = int64_t(rng());
        break;
      case 2:
        p.time_ms = extremes[pick(7)];
        break;
      case 3:
        p.time_ms = t0;
        break;
      default:
        p.time_ms = t0 + 100 * ii + (pick(50) == 0 ? int64_t(rng() % 60000) : 0);
        break;
    }
    const double x = double(i);
    switch (value_kind) {
      case 0:
        p.value = Bits(rng());
        break;
      case 1:
        p.value = specials[size_t(pick(int(specials.size())))];
        break;
      case 2:
        p.value = double(float(2.0 * std::exp(-x / 500) + 0.3 + 0.02 * noise(rng)));
        break;
      case 3:
        p.value = double(int64_t(rng() % 2000) - 1000);
        break;
      case 4:
        p.value = double(int64_t(rng() >> 10) - (int64_t(1) << 53));
        break;
      case 5:
        p.value = 1e-3 * 0.5 * (1 + std::cos(3.14159265358979 * x / double(n)));
        break;
      case 6:
        p.value = double(float(1e-3 * 0.5 * (1 + std::cos(3.14159 * x / double(n)))));
        break;
      case 7: {
        uint32_t f = uint32_t(rng());
        float v;
        std::memcpy(&v, &f, 4);
        p.value = double(v);  // may quiet a signalling NaN, which is fine: any double will do
        break;
      }
      case 8:  // integers, then float32 values, then doubles: every mode downgrade
        p.value = i < mix_at / 2 ? double(i / 7) : i < mix_at ? double(float(x * 0.37)) : x * 0.1;
        break;
      case 9:
        p.value = 60 + (pick(20) == 0 ? double(pick(5)) : 0);
        break;
      case 10:  // short decimals with specials among them: the scaled mode's exceptions
        p.value = pick(16) == 0 ? specials[size_t(pick(int(specials.size())))]
                                : double(int64_t(rng() % 20000) - 10000) / 1000;
        break;
      case 11:  // percentages of a count, as a script computes them
        p.value = 100.0 * double(rng() % 361) / 360;
        break;
      default:
        p.value = i == mix_at ? Bits(rng()) : double(i % 3);
        break;
    }
  }
  return pts;
}

// A random length: mostly short, sometimes a full chunk.
inline size_t RandomLength(Rng& rng, size_t max) {
  switch (rng() % 4) {
    case 0:
      return rng() % 8;
    case 1:
      return rng() % 300;
    case 2:
      return rng() % (max + 1);
    default:
      return max - rng() % 3;
  }
}

inline bool SamePoint(const Point& a, const Point& b) {
  return a.step == b.step && a.time_ms == b.time_ms && BitsOf(a.value) == BitsOf(b.value);
}

// Empty when equal bit for bit, else a description of the first difference.
inline std::string DiffPoints(const std::vector<Point>& want, const std::vector<Point>& got) {
  if (want.size() != got.size()) {
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!SamePoint(want[i], got[i])) {
      return "point " + std::to_string(i) + ": got (" + std::to_string(got[i].step) + ", " +
             std::to_string(got[i].time_ms) + ", " + std::to_string(BitsOf(got[i].value)) +
             ") want (" + std::to_string(want[i].step) + ", " + std::to_string(want[i].time_ms) +
             ", " + std::to_string(BitsOf(want[i].value)) + ")";
    }
  }
  return "";
}

// Reference bucketing, written independently of Bucketer: folds `pts` (in arrival order) with
// lo <= step <= hi and min_time <= time <= max_time into ceil((hi - lo + 1) / n)-wide buckets.
inline std::vector<Bucket> BruteForceBuckets(const std::vector<Point>& pts, int64_t lo, int64_t hi,
                                             int n, int64_t min_time = kMin,
                                             int64_t max_time = kMax) {
  const __int128 width = (__int128(hi) - lo + 1 + n - 1) / n;
  struct Acc {
    Bucket b;
    bool any = false;
  };
  std::vector<Acc> acc(size_t((__int128(hi) - lo) / width + 1));
  auto less = [](double a, double b) {  // -0.0 before +0.0
    return a < b || (a == b && std::signbit(a) && !std::signbit(b));
  };
  for (const Point& p : pts) {
    if (p.step < lo || p.step > hi || p.time_ms < min_time || p.time_ms > max_time) continue;
    Acc& a = acc[size_t((__int128(p.step) - lo) / width)];
    Bucket& b = a.b;
    if (!a.any) {
      a.any = true;
      b.step_min = b.step_max = p.step;
      b.time_min = b.time_max = p.time_ms;
      b.first = b.last = p.value;
      b.min = std::numeric_limits<double>::infinity();
      b.max = -std::numeric_limits<double>::infinity();
    }
    if (p.step < b.step_min) b.first = p.value;
    if (p.step >= b.step_max) b.last = p.value;
    b.step_min = std::min(b.step_min, p.step);
    b.step_max = std::max(b.step_max, p.step);
    b.time_min = std::min(b.time_min, p.time_ms);
    b.time_max = std::max(b.time_max, p.time_ms);
    ++b.count;
    if (std::isnan(p.value)) continue;
    if (less(p.value, b.min)) b.min = p.value;
    if (less(b.max, p.value)) b.max = p.value;
    b.sum += p.value;
  }
  std::vector<Bucket> out;
  for (const Acc& a : acc) {
    if (a.any) out.push_back(a.b);
  }
  return out;
}

// Empty when equal (doubles bit for bit), else the first difference.
inline std::string DiffBuckets(const std::vector<Bucket>& want, const std::vector<Bucket>& got) {
  if (want.size() != got.size()) {
    return "bucket count " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const Bucket& w = want[i];
    const Bucket& g = got[i];
    const bool same = w.step_min == g.step_min && w.step_max == g.step_max &&
                      w.time_min == g.time_min && w.time_max == g.time_max && w.count == g.count &&
                      BitsOf(w.min) == BitsOf(g.min) && BitsOf(w.max) == BitsOf(g.max) &&
                      BitsOf(w.sum) == BitsOf(g.sum) && BitsOf(w.first) == BitsOf(g.first) &&
                      BitsOf(w.last) == BitsOf(g.last);
    if (!same) {
      return "bucket " + std::to_string(i) + " steps [" + std::to_string(g.step_min) + ", " +
             std::to_string(g.step_max) + "] count " + std::to_string(g.count) + " min " +
             std::to_string(g.min) + " max " + std::to_string(g.max) + " sum " +
             std::to_string(g.sum) + " first " + std::to_string(g.first) + " last " +
             std::to_string(g.last) + "; want steps [" + std::to_string(w.step_min) + ", " +
             std::to_string(w.step_max) + "] count " + std::to_string(w.count) + " min " +
             std::to_string(w.min) + " max " + std::to_string(w.max) + " sum " +
             std::to_string(w.sum) + " first " + std::to_string(w.first) + " last " +
             std::to_string(w.last);
    }
  }
  return "";
}

// Replaces values by small integers, signed zeros, infinities of one sign and NaN, so that every
// grouping of a sum is exact and bucket sums can be compared bit for bit.
inline void MakeSumsExact(Rng& rng, std::vector<Point>* pts) {
  for (Point& p : *pts) {
    const uint64_t r = rng() % 40;
    p.value = r == 0   ? std::nan("")
              : r == 1 ? -0.0
              : r == 2 ? 0.0
              : r == 3 ? std::numeric_limits<double>::infinity()
                       : double(int64_t(rng() % 2001) - 1000) / 8;
  }
}

// A series held in memory the way a store holds it: chunk bytes by id, metadata in order.
struct MemSeries {
  std::vector<ChunkMeta> metas;
  std::map<int64_t, std::string> data;
  int loads = 0;  // chunks loaded through Loader()

  ChunkLoader Loader() {
    return [this](int64_t id) -> Result<std::string> {
      ++loads;
      auto it = data.find(id);
      if (it == data.end()) return Status::NotFound("no chunk " + std::to_string(id));
      return it->second;
    };
  }
};

// `pts` (in order) cut into full chunks of kMaxChunkPoints points and a last partial one.
inline MemSeries Chunked(const std::vector<Point>& pts) {
  MemSeries m;
  for (size_t i = 0; i < pts.size(); i += size_t(kMaxChunkPoints)) {
    ChunkEncoder enc;
    for (size_t j = i; j < std::min(pts.size(), i + size_t(kMaxChunkPoints)); ++j) {
      enc.Append(pts[j].step, pts[j].time_ms, pts[j].value);
    }
    const int64_t id = int64_t(m.metas.size());
    m.metas.push_back({id, enc.summary()});
    m.data[id] = enc.Encode();
  }
  return m;
}

}  // namespace cohort::series::testing
