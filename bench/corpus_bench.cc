// Bytes per point and codec speed on the metrics corpus (bench/README.md, issue 22).
//
//   ninja -C build corpus_bench && build/bench/corpus_bench [--corpus FILE] [--reps 5]
//                                                           [--keys] [--series]
//
// Every series of the corpus is cut into chunks of kMaxChunkPoints points in arrival order and
// coded by:
//   cohort    the tree's chunk codec (series::ChunkEncoder), everything in the chunk bytes
//   gorilla   Gorilla as published (bench/gorilla.h), per chunk
//   zstd-3    zstd level 3 over each whole series' raw columns (steps, times, value bits, 8
//   zstd-19   bytes each): a series-sized window, more context than a chunk codec has
// Sizes: bytes per point overall, per key (--keys: summed over runs), for the decimal keys
// (every value, or all but 10%, a decimal of at most 6 places and 7 digits, not all
// integers), and by value class; "(st+time)" is the part of cohort's bytes that steps and times
// cost (the same chunks with regular steps and constant times are that much smaller). Speed: encode
// and decode of the whole corpus on one thread, medians of --reps repetitions: thread CPU time
// (points per CPU second) and, where the kernel lets a process count its own instructions,
// instructions per point (steadier on a loaded machine).
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/coding.h"
#include "gorilla.h"
#include "series/chunk.h"

namespace cohort::bench {
namespace {

struct Series {
  std::string run, writer, key;
  bool system = false;
  std::vector<RawPoint> points;
};

bool ReadCorpus(const std::string& path, std::vector<Series>* out, std::string* err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *err = "cannot open " + path;
    return false;
  }
  const std::string packed((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    *err = path + ": not a zstd frame with its content size";
    return false;
  }
  std::string raw(size, '\0');
  if (ZSTD_isError(ZSTD_decompress(raw.data(), raw.size(), packed.data(), packed.size()))) {
    *err = path + ": zstd decompression failed";
    return false;
  }
  size_t pos = 0;
  auto need = [&](size_t n) { return pos + n <= raw.size(); };
  auto u = [&](int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(raw[pos++])) << (8 * i);
    return v;
  };
  auto str = [&](std::string* s) {
    if (!need(2)) return false;
    const size_t n = size_t(u(2));
    if (!need(n)) return false;
    s->assign(raw, pos, n);
    pos += n;
    return true;
  };
  if (!need(12) || raw.compare(0, 8, "CCORPUS1") != 0) {
    *err = path + ": not a corpus (magic CCORPUS1)";
    return false;
  }
  pos = 8;
  const size_t count = size_t(u(4));
  for (size_t s = 0; s < count; ++s) {
    Series x;
    if (!str(&x.run) || !str(&x.writer) || !need(1)) break;
    x.system = u(1) != 0;
    if (!str(&x.key) || !need(4)) break;
    const size_t n = size_t(u(4));
    if (!need(24 * n)) break;
    x.points.resize(n);
    for (auto& p : x.points) p.step = int64_t(u(8));
    for (auto& p : x.points) p.time_ms = int64_t(u(8));
    for (auto& p : x.points) p.bits = u(8);
    out->push_back(std::move(x));
  }
  if (out->size() != count || pos != raw.size()) {
    *err = path + ": truncated or trailing bytes";
    return false;
  }
  return true;
}

// A short decimal: v == k / 10^e exactly for some e in 1..6, |k| < 10^7.
bool ShortDecimal(double v) {
  double scale = 1;
  for (int e = 1; e <= 6; ++e) {
    scale *= 10;
    const double k = std::nearbyint(v * scale);
    if (std::fabs(k) < 1e7 && k / scale == v) return true;
  }
  return false;
}

enum Class { kIntegers, kDecimals, kFloat32, kDoubles, kClassCount };
const char* const kClassNames[] = {"integers", "short decimals", "float32", "other doubles"};

Class Classify(const Series& s) {
  size_t finite = 0, integers = 0, decimals = 0, f32 = 0;
  for (const RawPoint& p : s.points) {
    const double v = coding::BitsDouble(p.bits);
    if (!std::isfinite(v)) continue;
    ++finite;
    if (v == std::nearbyint(v)) {
      ++integers;
    } else if (ShortDecimal(v)) {
      ++decimals;
    } else if (double(float(v)) == v) {
      ++f32;
    }
  }
  if (integers == finite) return kIntegers;
  if (decimals > 0 && (decimals + integers) * 10 >= finite * 9) return kDecimals;
  if (f32 + integers == finite) return kFloat32;
  return kDoubles;
}

// Thread CPU time and (when available) user-space instruction count of this thread.
class Meter {
 public:
  Meter() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    fd_ = int(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  }
  ~Meter() {
    if (fd_ >= 0) close(fd_);
  }
  bool has_instructions() const { return fd_ >= 0; }
  void Start() {
    if (fd_ >= 0) {
      ioctl(fd_, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
    }
    cpu0_ = Cpu();
  }
  // CPU seconds and instructions since Start().
  void Stop(double* cpu_s, double* instructions) {
    *cpu_s = Cpu() - cpu0_;
    *instructions = 0;
    if (fd_ >= 0) {
      ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
      uint64_t n = 0;
      if (read(fd_, &n, sizeof n) == sizeof n) *instructions = double(n);
    }
  }

 private:
  static double Cpu() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  int fd_ = -1;
  double cpu0_ = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One codec: encodes a series into blobs (appending), decodes them back (for checking and timing).
struct Codec {
  const char* name;
  std::function<void(const Series&, std::vector<std::string>*)> encode;
  std::function<bool(const std::vector<std::string>&, size_t first, size_t count,
                     std::vector<RawPoint>*)>
      decode;
};

void Chunked(const Series& s, const std::function<void(const RawPoint*, size_t)>& f) {
  for (size_t i = 0; i < s.points.size(); i += size_t(series::kMaxChunkPoints)) {
    f(s.points.data() + i, std::min(s.points.size() - i, size_t(series::kMaxChunkPoints)));
  }
}

Codec CohortCodec() {
  return {"cohort",
          [](const Series& s, std::vector<std::string>* out) {
            Chunked(s, [&](const RawPoint* p, size_t n) {
              series::ChunkEncoder e;
              for (size_t i = 0; i < n; ++i) {
                e.Append(p[i].step, p[i].time_ms, coding::BitsDouble(p[i].bits));
              }
              out->push_back(e.Encode());
            });
          },
          [](const std::vector<std::string>& blobs, size_t first, size_t count,
             std::vector<RawPoint>* out) {
            thread_local series::ChunkIterator it;
            for (size_t b = first; b < first + count; ++b) {
              if (!it.Reset(blobs[b]).ok()) return false;
              for (const series::Point& p : it.points()) {
                out->push_back({p.step, p.time_ms, coding::DoubleBits(p.value)});
              }
            }
            return true;
          }};
}

Codec GorillaCodec() {
  return {"gorilla",
          [](const Series& s, std::vector<std::string>* out) {
            Chunked(s, [&](const RawPoint* p, size_t n) {
              out->emplace_back();
              GorillaEncode(p, n, &out->back());
            });
          },
          [](const std::vector<std::string>& blobs, size_t first, size_t count,
             std::vector<RawPoint>* out) {
            for (size_t b = first; b < first + count; ++b) {
              if (!GorillaDecode(blobs[b], out)) return false;
            }
            return true;
          }};
}

Codec ZstdCodec(int level, const char* name) {
  return {name,
          [level](const Series& s, std::vector<std::string>* out) {
            const size_t n = s.points.size();
            std::string raw(24 * n, '\0');
            for (size_t i = 0; i < n; ++i) {
              std::memcpy(&raw[8 * i], &s.points[i].step, 8);
              std::memcpy(&raw[8 * (n + i)], &s.points[i].time_ms, 8);
              std::memcpy(&raw[8 * (2 * n + i)], &s.points[i].bits, 8);
            }
            std::string z(ZSTD_compressBound(raw.size()), '\0');
            z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), level));
            out->push_back(std::move(z));
          },
          [](const std::vector<std::string>& blobs, size_t first, size_t count,
             std::vector<RawPoint>* out) {
            thread_local std::string raw;
            for (size_t b = first; b < first + count; ++b) {
              const auto size = ZSTD_getFrameContentSize(blobs[b].data(), blobs[b].size());
              raw.resize(size);
              if (ZSTD_isError(
                      ZSTD_decompress(raw.data(), raw.size(), blobs[b].data(), blobs[b].size()))) {
                return false;
              }
              const size_t n = raw.size() / 24;
              const size_t at = out->size();
              out->resize(at + n);
              for (size_t i = 0; i < n; ++i) {
                RawPoint& p = (*out)[at + i];
                std::memcpy(&p.step, &raw[8 * i], 8);
                std::memcpy(&p.time_ms, &raw[8 * (n + i)], 8);
                std::memcpy(&p.bits, &raw[8 * (2 * n + i)], 8);
              }
            }
            return true;
          }};
}

struct Result {
  std::vector<size_t> bytes;  // per series
  std::vector<std::vector<std::string>> blobs;
  double enc_cpu = 0, enc_ins = 0, dec_cpu = 0, dec_ins = 0;  // medians, whole corpus
  bool roundtrip = true;
};

Result Measure(const Codec& c, const std::vector<Series>& corpus, int reps, Meter* m) {
  Result r;
  std::vector<double> ec, ei, dc, di;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<std::vector<std::string>> blobs(corpus.size());
    double cpu, ins;
    m->Start();
    for (size_t s = 0; s < corpus.size(); ++s) c.encode(corpus[s], &blobs[s]);
    m->Stop(&cpu, &ins);
    ec.push_back(cpu);
    ei.push_back(ins);
    r.blobs = std::move(blobs);
  }
  std::vector<RawPoint> out;
  for (int rep = 0; rep < reps; ++rep) {
    double cpu, ins;
    bool ok = true;
    m->Start();
    for (size_t s = 0; s < corpus.size(); ++s) {
      out.clear();
      ok &= c.decode(r.blobs[s], 0, r.blobs[s].size(), &out);
    }
    m->Stop(&cpu, &ins);
    dc.push_back(cpu);
    di.push_back(ins);
    r.roundtrip &= ok;
  }
  for (size_t s = 0; s < corpus.size(); ++s) {  // bit-exact round trip of every point
    out.clear();
    r.roundtrip &=
        c.decode(r.blobs[s], 0, r.blobs[s].size(), &out) && out.size() == corpus[s].points.size() &&
        std::equal(out.begin(), out.end(), corpus[s].points.begin(),
                   [](const RawPoint& a, const RawPoint& b) {
                     return a.step == b.step && a.time_ms == b.time_ms && a.bits == b.bits;
                   });
    size_t b = 0;
    for (const auto& blob : r.blobs[s]) b += blob.size();
    r.bytes.push_back(b);
  }
  r.enc_cpu = Median(ec);
  r.enc_ins = Median(ei);
  r.dec_cpu = Median(dc);
  r.dec_ins = Median(di);
  return r;
}

int Main(int argc, char** argv) {
  std::string path = COHORT_SOURCE_DIR "/bench/corpus/training.corpus.zst";
  int reps = 5;
  bool per_key = false, per_series = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--corpus" && i + 1 < argc) {
      path = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--keys") {
      per_key = true;
    } else if (a == "--series") {
      per_series = true;
    } else {
      std::fprintf(stderr, "usage: corpus_bench [--corpus FILE] [--reps N] [--keys] [--series]\n");
      return 2;
    }
  }
  std::vector<Series> corpus;
  std::string err;
  if (!ReadCorpus(path, &corpus, &err)) {
    std::fprintf(stderr, "corpus_bench: %s\n", err.c_str());
    return 1;
  }
  size_t points = 0;
  for (const Series& s : corpus) points += s.points.size();
  std::printf("corpus %s: %zu series, %zu points; chunk format version %d\n", path.c_str(),
              corpus.size(), points, int(series::kChunkVersion));

  Meter meter;
  const Codec codecs[] = {CohortCodec(), GorillaCodec(), ZstdCodec(3, "zstd-3"),
                          ZstdCodec(19, "zstd-19")};
  constexpr size_t kCodecs = std::size(codecs);
  std::vector<Result> results;
  for (const Codec& c : codecs) results.push_back(Measure(c, corpus, reps, &meter));

  // The share of steps and times in the cohort codec's bytes: the same chunks with regular steps
  // and one time (whose streams cost nothing) hold the values and the headers alone.
  std::vector<size_t> values_only;
  for (const Series& s : corpus) {
    Series v = s;
    for (size_t i = 0; i < v.points.size(); ++i)
      v.points[i].step = int64_t(i), v.points[i].time_ms = 0;
    std::vector<std::string> blobs;
    codecs[0].encode(v, &blobs);
    size_t b = 0;
    for (const auto& blob : blobs) b += blob.size();
    values_only.push_back(b);
  }

  // Sizes by class and overall.
  std::vector<Class> cls;
  for (const Series& s : corpus) cls.push_back(Classify(s));
  std::printf("\n%-22s %9s", "bytes/point", "points");
  for (const Codec& c : codecs) std::printf(" %9s", c.name);
  std::printf(" %9s\n", "(st+time)");
  auto row = [&](const char* label, const std::function<bool(size_t)>& take) {
    size_t n = 0;
    std::vector<size_t> b(kCodecs, 0);
    size_t v = 0;
    for (size_t s = 0; s < corpus.size(); ++s) {
      if (!take(s)) continue;
      n += corpus[s].points.size();
      for (size_t c = 0; c < kCodecs; ++c) b[c] += results[c].bytes[s];
      v += values_only[s];
    }
    if (n == 0) return;
    std::printf("%-22s %9zu", label, n);
    for (size_t c = 0; c < kCodecs; ++c) std::printf(" %9.3f", double(b[c]) / double(n));
    std::printf(" %9.3f\n", (double(b[0]) - double(v)) / double(n));
  };
  row("all", [](size_t) { return true; });
  row("user keys", [&](size_t s) { return !corpus[s].system; });
  row("system metrics", [&](size_t s) { return corpus[s].system; });
  for (int k = 0; k < kClassCount; ++k) {
    row(kClassNames[k], [&](size_t s) { return cls[s] == k; });
  }
  if (per_key) {
    std::printf("\nper key (all runs):\n");
    std::map<std::string, std::vector<size_t>> keys;
    for (size_t s = 0; s < corpus.size(); ++s) {
      keys[(corpus[s].system ? "system/" : "") + corpus[s].key].push_back(s);
    }
    for (const auto& entry : keys) {  // not a structured binding: clang 14 cannot capture one
      const std::vector<size_t>& members = entry.second;
      row(entry.first.c_str(),
          [&](size_t s) { return std::find(members.begin(), members.end(), s) != members.end(); });
    }
  }
  if (per_series) {
    std::printf("\nper series (class; cohort's value modes of its chunks):\n");
    for (size_t s = 0; s < corpus.size(); ++s) {
      std::string label = corpus[s].run + " " + corpus[s].key;
      std::map<int, int> modes;
      for (const auto& blob : results[0].blobs[s]) ++modes[uint8_t(blob[1])];
      row(label.c_str(), [&](size_t t) { return t == s; });
      std::printf("%24s %s; modes", "", kClassNames[cls[s]]);
      for (auto [m, n] : modes) std::printf(" %d:%d", m, n);
      std::printf("\n");
    }
  }

  std::printf("\none thread, medians of %d: encode / decode of the whole corpus\n", reps);
  std::printf("%-10s %14s %14s %12s %12s %10s\n", "codec", "enc Mpt/cpu-s", "dec Mpt/cpu-s",
              "enc ins/pt", "dec ins/pt", "roundtrip");
  bool ok = true;
  for (size_t c = 0; c < kCodecs; ++c) {
    const Result& r = results[c];
    const double np = double(points);
    std::printf("%-10s %14.1f %14.1f", codecs[c].name, np / r.enc_cpu / 1e6, np / r.dec_cpu / 1e6);
    if (meter.has_instructions()) {
      std::printf(" %12.0f %12.0f", r.enc_ins / np, r.dec_ins / np);
    } else {
      std::printf(" %12s %12s", "n/a", "n/a");
    }
    std::printf(" %10s\n", r.roundtrip ? "exact" : "MISMATCH");
    ok &= r.roundtrip;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace cohort::bench

int main(int argc, char** argv) { return cohort::bench::Main(argc, argv); }
