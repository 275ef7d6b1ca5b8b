#include "series/chunk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include "core/coding.h"
#include "core/crc32c.h"
#include "series/bits.h"

namespace cohort::series {
namespace {

using internal::BitCounter;
using internal::BitReader;
using internal::BitWriter;

constexpr size_t kCrcSize = 4;
constexpr int kMaxClasses = 5;      // prefix classes of a residual stream
constexpr int kMaxWidth = 64;       // widest residual class
constexpr int kMedianSamples = 31;  // differences sampled to pick a stream's base
constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// ---------------------------------------------------------------------------------------------
// Value representations. Conversions work on bit patterns, so they are exact and do not depend
// on the floating-point environment (flush-to-zero / denormals-are-zero included).

// The float32 pattern of the double with pattern `d`, if that double is exactly a float32
// (NaNs included when their payload survives dropping its low 29 bits).
bool ToFloat32Bits(uint64_t d, uint32_t* f) {
  const uint32_t sign = uint32_t(d >> 63) << 31;
  const int exp = int((d >> 52) & 0x7FF);
  const uint64_t mant = d & ((uint64_t{1} << 52) - 1);
  constexpr uint64_t kLow29 = (uint64_t{1} << 29) - 1;
  if (exp == 0x7FF) {  // infinity or NaN
    if (mant & kLow29) return false;
    *f = sign | 0x7F800000u | uint32_t(mant >> 29);
    return true;
  }
  if (exp == 0) {  // zero, or a double denormal (far below float32's range)
    if (mant != 0) return false;
    *f = sign;
    return true;
  }
  const int e = exp - 1023;
  if (e >= -126 && e <= 127) {  // float32 normal
    if (mant & kLow29) return false;
    *f = sign | uint32_t(e + 127) << 23 | uint32_t(mant >> 29);
    return true;
  }
  if (e >= -149 && e < -126) {  // float32 denormal: significand * 2^-149
    const int shift = -97 - e;  // 30..52
    const uint64_t sig = mant | (uint64_t{1} << 52);
    if (sig & ((uint64_t{1} << shift) - 1)) return false;
    *f = sign | uint32_t(sig >> shift);
    return true;
  }
  return false;
}

// The double pattern of the float32 pattern `f` (exact inverse of ToFloat32Bits).
uint64_t FromFloat32Bits(uint32_t f) {
  const uint64_t sign = uint64_t(f >> 31) << 63;
  const uint32_t exp = (f >> 23) & 0xFF;
  const uint32_t mant = f & 0x7FFFFF;
  if (exp == 0xFF) return sign | uint64_t{0x7FF} << 52 | uint64_t(mant) << 29;
  if (exp == 0) {
    if (mant == 0) return sign;
    const int top = 31 - std::countl_zero(mant);  // 0..22
    const uint64_t frac = (uint64_t(mant) << (52 - top)) & ((uint64_t{1} << 52) - 1);
    return sign | uint64_t(top - 149 + 1023) << 52 | frac;
  }
  return sign | uint64_t(exp - 127 + 1023) << 52 | uint64_t(mant) << 29;
}

// The integer a double holds, if it is one in [-2^53, 2^53] (not -0.0).
bool ToInteger(double v, int64_t* out) {
  if (!(v >= -kMaxExactInteger && v <= kMaxExactInteger)) return false;  // NaN fails too
  const int64_t i = static_cast<int64_t>(v);
  if (coding::DoubleBits(static_cast<double>(i)) != coding::DoubleBits(v)) return false;
  *out = i;
  return true;
}

// Order-preserving signed integers for sign-magnitude float patterns: -0.0 -> -1, +0.0 -> 0,
// and adjacent floats map to adjacent integers, so smooth curves give small differences.
int64_t Ordered64(uint64_t b) {
  return (b & kSignBit) ? int64_t{-1} - int64_t(b & ~kSignBit) : int64_t(b);
}
uint64_t FromOrdered64(int64_t o) { return o < 0 ? kSignBit | uint64_t(int64_t{-1} - o) : uint64_t(o); }
int64_t Ordered32(uint32_t f) {
  return (f >> 31) ? int64_t{-1} - int64_t(f & 0x7FFFFFFFu) : int64_t(f);
}
bool FromOrdered32(int64_t o, uint32_t* f) {
  if (o < -(int64_t{1} << 31) || o > int64_t{0x7FFFFFFF}) return false;
  *f = o < 0 ? 0x80000000u | uint32_t(int64_t{-1} - o) : uint32_t(o);
  return true;
}

int BitWidth(uint64_t z) { return 64 - std::countl_zero(z); }
int VarintLength(uint64_t v) { return v < 128 ? 1 : 1 + (BitWidth(v) - 1) / 7; }

// ---------------------------------------------------------------------------------------------
// Residual streams (steps, times, integer and delta-coded values).
//
// A stream of n int64 x[0..n) is coded as x[0], (for order 2) its first delta, and the n-order
// residuals r = (difference of order `order`) - base, all in wrapping 64-bit arithmetic. Each
// residual is zigzagged and written as a class prefix (truncated unary over k classes: "0",
// "10", "110", ..., the last class has no terminating 0) followed by the class's width in bits.

struct StreamCode {
  int order = 1;                     // 1: deltas; 2: deltas of deltas
  int k = 1;                         // classes, 1..kMaxClasses
  uint8_t widths[kMaxClasses] = {};  // bits per class, strictly increasing, <= kMaxWidth
  int64_t base = 0;                  // subtracted from every difference before zigzag
  uint64_t total_bits = 0;           // header and payload, when planned
};

struct StreamHeader {
  StreamCode code;
  uint64_t x0 = 0, d0 = 0;
};

// Reusable buffers of one Encode() call.
struct Scratch {
  std::vector<uint64_t> d1, d2;
  std::vector<int64_t> sample;
};

// d1[i-1] = x[i] - x[i-1]; d2[i-2] = d1[i-1] - d1[i-2].
void Differences(const int64_t* x, size_t n, Scratch* s) {
  s->d1.resize(n > 1 ? n - 1 : 0);
  s->d2.resize(n > 2 ? n - 2 : 0);
  for (size_t i = 1; i < n; ++i) s->d1[i - 1] = uint64_t(x[i]) - uint64_t(x[i - 1]);
  for (size_t i = 2; i < n; ++i) s->d2[i - 2] = s->d1[i - 1] - s->d1[i - 2];
}

// Median of a sample of `d`: the base that centres the residuals (the stream's typical step).
int64_t SampleMedian(const std::vector<uint64_t>& d, Scratch* s) {
  if (d.empty()) return 0;
  s->sample.clear();
  const size_t m = d.size();
  const size_t take = std::min<size_t>(m, kMedianSamples);
  for (size_t j = 0; j < take; ++j) s->sample.push_back(int64_t(d[j * m / take]));
  auto mid = s->sample.begin() + take / 2;
  std::nth_element(s->sample.begin(), mid, s->sample.end());
  return *mid;
}

uint64_t Residual(uint64_t diff, int64_t base) {
  return coding::ZigZag(int64_t(diff - uint64_t(base)));
}

// Chooses up to kMaxClasses class widths minimising the payload bits for a histogram of residual
// widths (hist[w] = residuals needing exactly w bits). Exact dynamic programme over the distinct
// widths present; class c < k-1 costs c+1 prefix bits, the last class k-1 bits.
void FitClasses(const uint32_t (&hist)[kMaxWidth + 1], StreamCode* code, uint64_t* bits) {
  int v[kMaxWidth + 1];
  uint64_t cum[kMaxWidth + 2];
  int d = 0;
  cum[0] = 0;
  for (int w = 0; w <= kMaxWidth; ++w) {
    if (hist[w] == 0) continue;
    v[d] = w;
    cum[d + 1] = cum[d] + hist[w];
    ++d;
  }
  code->k = 1;
  std::fill(std::begin(code->widths), std::end(code->widths), 0);
  if (d == 0) {
    *bits = 0;
    return;
  }
  // f[c][i]: fewest bits for the values of the first i distinct widths using non-final classes
  // 0..c, class c ending at width v[i-1]; from[c][i]: where class c starts.
  constexpr uint64_t kInf = ~uint64_t{0};
  uint64_t f[kMaxClasses - 1][kMaxWidth + 2];
  int from[kMaxClasses - 1][kMaxWidth + 2];
  for (int i = 1; i <= d; ++i) f[0][i] = uint64_t(1 + v[i - 1]) * cum[i];
  for (int c = 1; c < kMaxClasses - 1; ++c) {
    for (int i = c + 1; i <= d; ++i) {
      f[c][i] = kInf;
      for (int j = c; j < i; ++j) {
        const uint64_t cost = f[c - 1][j] + uint64_t(c + 1 + v[i - 1]) * (cum[i] - cum[j]);
        if (cost < f[c][i]) {
          f[c][i] = cost;
          from[c][i] = j;
        }
      }
    }
  }
  uint64_t best = uint64_t(v[d - 1]) * cum[d];
  int best_k = 1, best_j = 0;
  for (int k = 2; k <= std::min(kMaxClasses, d); ++k) {
    for (int j = k - 1; j < d; ++j) {
      const uint64_t cost = f[k - 2][j] + uint64_t(k - 1 + v[d - 1]) * (cum[d] - cum[j]);
      if (cost < best) {
        best = cost;
        best_k = k;
        best_j = j;
      }
    }
  }
  code->k = best_k;
  code->widths[best_k - 1] = uint8_t(v[d - 1]);
  for (int c = best_k - 2, i = best_j; c >= 0; --c) {
    code->widths[c] = uint8_t(v[i - 1]);
    if (c > 0) i = from[c][i];
  }
  *bits = best;
}

size_t HeaderBytes(const StreamCode& c, const int64_t* x, size_t n, const Scratch& s) {
  size_t bytes = 1 + size_t(c.k) + VarintLength(coding::ZigZag(x[0])) +
                 VarintLength(coding::ZigZag(c.base));
  if (c.order == 2 && n >= 2) bytes += VarintLength(coding::ZigZag(int64_t(s.d1[0])));
  return bytes;
}

// Picks order, base and classes for x[0..n), n >= 1. Leaves s->d1/d2 holding x's differences.
StreamCode PlanStream(const int64_t* x, size_t n, Scratch* s) {
  Differences(x, n, s);
  StreamCode best;
  best.total_bits = 8 * HeaderBytes(best, x, n, *s);
  if (n < 2) return best;
  for (int order = 1; order <= 2; ++order) {
    const std::vector<uint64_t>& d = order == 1 ? s->d1 : s->d2;
    StreamCode c;
    c.order = order;
    c.base = SampleMedian(d, s);
    uint32_t hist[kMaxWidth + 1] = {};
    for (uint64_t diff : d) ++hist[BitWidth(Residual(diff, c.base))];
    uint64_t payload = 0;
    FitClasses(hist, &c, &payload);
    c.total_bits = payload + 8 * HeaderBytes(c, x, n, *s);
    if (order == 1 || c.total_bits < best.total_bits) best = c;
  }
  return best;
}

void WriteStreamHeader(const StreamCode& c, const int64_t* x, size_t n, const Scratch& s,
                       std::string* out) {
  out->push_back(char(c.order << 4 | c.k));
  for (int i = 0; i < c.k; ++i) out->push_back(char(c.widths[i]));
  coding::PutVarint64(out, coding::ZigZag(x[0]));
  if (c.order == 2 && n >= 2) coding::PutVarint64(out, coding::ZigZag(int64_t(s.d1[0])));
  coding::PutVarint64(out, coding::ZigZag(c.base));
}

// Writes the residuals of a stream planned by PlanStream (s holds its differences).
void WriteStreamBits(const StreamCode& c, const Scratch& s, BitWriter* w) {
  const std::vector<uint64_t>& d = c.order == 1 ? s.d1 : s.d2;
  uint8_t class_of_width[kMaxWidth + 1];
  for (int width = kMaxWidth, cls = c.k - 1; width >= 0; --width) {
    while (cls > 0 && c.widths[cls - 1] >= width) --cls;
    class_of_width[width] = uint8_t(cls);
  }
  for (uint64_t diff : d) {
    const uint64_t z = Residual(diff, c.base);
    const int cls = class_of_width[BitWidth(z)];
    const int plen = cls + (cls < c.k - 1 ? 1 : 0);
    const uint64_t prefix = (uint64_t{1} << cls) - 1;
    const int width = c.widths[cls];
    if (plen + width <= 64) {
      w->Write(prefix | z << plen, plen + width);
    } else {
      w->Write(prefix, plen);
      w->Write(z, width);
    }
  }
}

bool ParseStreamHeader(std::string_view* in, size_t n, StreamHeader* h) {
  if (in->empty()) return false;
  const uint8_t ok = uint8_t((*in)[0]);
  in->remove_prefix(1);
  StreamCode& c = h->code;
  c.order = ok >> 4;
  c.k = ok & 0x0F;
  if (c.order < 1 || c.order > 2 || c.k < 1 || c.k > kMaxClasses) return false;
  if (in->size() < size_t(c.k)) return false;
  for (int i = 0; i < c.k; ++i) {
    c.widths[i] = uint8_t((*in)[i]);
    if (c.widths[i] > kMaxWidth || (i > 0 && c.widths[i] <= c.widths[i - 1])) return false;
  }
  in->remove_prefix(size_t(c.k));
  uint64_t v;
  if (!coding::GetVarint64(in, &v)) return false;
  h->x0 = uint64_t(coding::UnZigZag(v));
  if (c.order == 2 && n >= 2) {
    if (!coding::GetVarint64(in, &v)) return false;
    h->d0 = uint64_t(coding::UnZigZag(v));
  }
  if (!coding::GetVarint64(in, &v)) return false;
  c.base = coding::UnZigZag(v);
  return true;
}

inline uint64_t ReadResidual(const StreamCode& c, BitReader* r) {
  if (c.k == 1) return r->ReadLong(c.widths[0]);
  int cls = std::countr_one(r->Peek(kMaxClasses - 1));
  if (cls > c.k - 1) cls = c.k - 1;
  const int plen = cls + (cls < c.k - 1 ? 1 : 0);
  const int width = c.widths[cls];
  if (plen + width <= 56) return r->Read(plen + width) >> plen;
  r->Consume(plen);
  return r->ReadLong(width);
}

// Decodes n >= 1 values, calling emit(i, x) for each in order.
template <typename Emit>
void DecodeStream(const StreamHeader& h, size_t n, BitReader* r, Emit emit) {
  const StreamCode& c = h.code;
  const uint64_t base = uint64_t(c.base);
  uint64_t x = h.x0;
  emit(0, x);
  if (n < 2) return;
  const bool constant = c.k == 1 && c.widths[0] == 0;  // every residual is zero
  if (c.order == 1) {
    for (size_t i = 1; i < n; ++i) {
      x += base + (constant ? 0 : uint64_t(coding::UnZigZag(ReadResidual(c, r))));
      emit(i, x);
    }
    return;
  }
  uint64_t d = h.d0;
  x += d;
  emit(1, x);
  for (size_t i = 2; i < n; ++i) {
    d += base + (constant ? 0 : uint64_t(coding::UnZigZag(ReadResidual(c, r))));
    x += d;
    emit(i, x);
  }
}

// ---------------------------------------------------------------------------------------------
// Gorilla XOR values over W-bit patterns. The first value is written in full; then each value's
// XOR with the previous one as "0" (equal), "10" + the bits inside the previous window of
// meaningful bits, or "11" + leading zeros (L bits) + meaningful length - 1 (L bits) + those
// bits. The window starts as the whole word.

template <int W, typename Writer>
void XorEncode(const std::vector<uint64_t>& v, Writer* w) {
  constexpr int kL = W == 64 ? 6 : 5;
  w->Write(v[0], W);
  int prev_lead = 0, prev_trail = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    const uint64_t x = v[i] ^ v[i - 1];
    if (x == 0) {
      w->Write(0, 1);
      continue;
    }
    const int lead = std::countl_zero(x) - (64 - W);
    const int trail = std::countr_zero(x);
    const int len = W - lead - trail;
    const int window = W - prev_lead - prev_trail;
    if (lead >= prev_lead && trail >= prev_trail && window <= len + 2 * kL) {
      w->Write(0b01, 2);
      w->Write(x >> prev_trail, window);
    } else {
      w->Write(0b11, 2);
      w->Write(uint64_t(lead), kL);
      w->Write(uint64_t(len - 1), kL);
      w->Write(x >> trail, len);
      prev_lead = lead;
      prev_trail = trail;
    }
  }
}

// Decodes n >= 1 patterns, calling emit(i, pattern). False on an impossible window.
template <int W, typename Emit>
bool XorDecode(BitReader* r, size_t n, Emit emit) {
  constexpr int kL = W == 64 ? 6 : 5;
  uint64_t prev = r->ReadLong(W);
  emit(0, prev);
  int prev_lead = 0, prev_trail = 0;
  for (size_t i = 1; i < n; ++i) {
    const uint64_t p = r->Peek(2);
    if ((p & 1) == 0) {
      r->Consume(1);
    } else if ((p & 2) == 0) {
      r->Consume(2);
      prev ^= r->ReadLong(W - prev_lead - prev_trail) << prev_trail;
    } else {
      r->Consume(2);
      const int lead = int(r->Read(kL));
      const int len = int(r->Read(kL)) + 1;
      if (lead + len > W) return false;
      prev_lead = lead;
      prev_trail = W - lead - len;
      prev ^= r->ReadLong(len) << prev_trail;
    }
    emit(i, prev);
  }
  return true;
}

Status Corrupt(std::string what) { return Status::Corruption("series chunk: " + std::move(what)); }

bool LessWithSignedZero(double a, double b) {
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void ChunkSummary::Add(int64_t step, int64_t time_ms, double value) {
  if (count == 0 || step < min_step) first = value;
  if (count == 0 || step >= max_step) last = value;
  ++count;
  min_step = std::min(min_step, step);
  max_step = std::max(max_step, step);
  min_time = std::min(min_time, time_ms);
  max_time = std::max(max_time, time_ms);
  if (std::isnan(value)) {
    ++nan_count;
    return;
  }
  if (LessWithSignedZero(value, min)) min = value;
  if (LessWithSignedZero(max, value)) max = value;
  sum += value;
}

void ChunkSummary::Merge(const ChunkSummary& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  if (o.min_step < min_step) first = o.first;
  if (o.max_step >= max_step) last = o.last;
  count += o.count;
  nan_count += o.nan_count;
  min_step = std::min(min_step, o.min_step);
  max_step = std::max(max_step, o.max_step);
  min_time = std::min(min_time, o.min_time);
  max_time = std::max(max_time, o.max_time);
  if (LessWithSignedZero(o.min, min)) min = o.min;
  if (LessWithSignedZero(max, o.max)) max = o.max;
  sum += o.sum;
}

ChunkEncoder::ChunkEncoder() = default;

void ChunkEncoder::Append(int64_t step, int64_t time_ms, double value) {
  steps_.push_back(step);
  times_.push_back(time_ms);
  values_.push_back(value);
  summary_.Add(step, time_ms, value);
  int64_t i;
  uint32_t f;
  if (all_integer_) all_integer_ = ToInteger(value, &i);
  if (all_float32_) all_float32_ = ToFloat32Bits(coding::DoubleBits(value), &f);
}

std::string ChunkEncoder::Encode() const {
  const size_t n = steps_.size();
  std::string out;
  out.push_back(char(kChunkMagic | kChunkVersion));
  if (n == 0) {
    out.push_back(char(ValueMode::kXor64));
    coding::PutVarint64(&out, 0);
    coding::PutFixed32(&out, crc32c::Value(out));
    return out;
  }
  Scratch step_scratch, time_scratch, value_scratch;
  const StreamCode step_code = PlanStream(steps_.data(), n, &step_scratch);
  const StreamCode time_code = PlanStream(times_.data(), n, &time_scratch);

  // Price every value mode the chunk allows; keep the cheapest.
  ValueMode mode = ValueMode::kXor64;
  uint64_t best_bits = ~uint64_t{0};
  StreamCode value_code;
  std::vector<int64_t> ints;      // the residual-coded form, for the best residual mode so far
  std::vector<uint64_t> patterns; // the XOR form
  std::vector<int64_t> candidate(n);
  Scratch candidate_scratch;
  auto try_stream = [&](ValueMode m) {
    const StreamCode c = PlanStream(candidate.data(), n, &candidate_scratch);
    if (c.total_bits < best_bits) {
      best_bits = c.total_bits;
      mode = m;
      value_code = c;
      ints.swap(candidate);
      std::swap(value_scratch, candidate_scratch);
      candidate.resize(n);
    }
  };
  if (all_integer_) {
    for (size_t i = 0; i < n; ++i) ToInteger(values_[i], &candidate[i]);
    try_stream(ValueMode::kInteger);
  }
  patterns.resize(n);
  if (all_float32_) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t f = 0;
      ToFloat32Bits(coding::DoubleBits(values_[i]), &f);
      patterns[i] = f;
      candidate[i] = Ordered32(f);
    }
    try_stream(ValueMode::kFloat32Delta);
    BitCounter counter;
    XorEncode<32>(patterns, &counter);
    if (counter.bits() < best_bits) {
      best_bits = counter.bits();
      mode = ValueMode::kXor32;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      patterns[i] = coding::DoubleBits(values_[i]);
      candidate[i] = Ordered64(patterns[i]);
    }
    try_stream(ValueMode::kFloat64Delta);
    BitCounter counter;
    XorEncode<64>(patterns, &counter);
    if (counter.bits() < best_bits) {
      best_bits = counter.bits();
      mode = ValueMode::kXor64;
    }
  }
  const bool xor_mode = mode == ValueMode::kXor32 || mode == ValueMode::kXor64;

  out.push_back(char(mode));
  coding::PutVarint64(&out, n);
  WriteStreamHeader(step_code, steps_.data(), n, step_scratch, &out);
  WriteStreamHeader(time_code, times_.data(), n, time_scratch, &out);
  if (!xor_mode) WriteStreamHeader(value_code, ints.data(), n, value_scratch, &out);
  out.reserve(out.size() + (step_code.total_bits + time_code.total_bits + best_bits) / 8 + 16);
  BitWriter w(&out);
  WriteStreamBits(step_code, step_scratch, &w);
  WriteStreamBits(time_code, time_scratch, &w);
  if (mode == ValueMode::kXor32) {
    XorEncode<32>(patterns, &w);
  } else if (mode == ValueMode::kXor64) {
    XorEncode<64>(patterns, &w);
  } else {
    WriteStreamBits(value_code, value_scratch, &w);
  }
  w.Finish();
  coding::PutFixed32(&out, crc32c::Value(out));
  return out;
}

Result<ChunkEncoder> ChunkEncoder::Resume(std::string_view encoded) {
  std::vector<store::Point> points;
  COHORT_RETURN_IF_ERROR(DecodeChunkInto(encoded, &points));
  ChunkEncoder e;
  e.steps_.reserve(points.size());
  e.times_.reserve(points.size());
  e.values_.reserve(points.size());
  for (const store::Point& p : points) e.Append(p.step, p.time_ms, p.value);
  return e;
}

Result<std::vector<store::Point>> DecodeChunk(std::string_view encoded) {
  std::vector<store::Point> points;
  COHORT_RETURN_IF_ERROR(DecodeChunkInto(encoded, &points));
  return points;
}

namespace {

Status DecodeBody(std::string_view in, std::vector<store::Point>* out) {
  if (in.size() < 3 + kCrcSize) {
    return Corrupt("truncated (" + std::to_string(in.size()) + " bytes)");
  }
  const uint8_t magic_version = uint8_t(in[0]);
  if ((magic_version & 0xF0) != kChunkMagic) return Corrupt("bad magic byte");
  if ((magic_version & 0x0F) != kChunkVersion) {
    return Corrupt("unsupported version " + std::to_string(magic_version & 0x0F));
  }
  const size_t body_size = in.size() - kCrcSize;
  if (coding::DecodeFixed32(in.data() + body_size) != crc32c::Value(in.data(), body_size)) {
    return Corrupt("checksum mismatch");
  }
  std::string_view body = in.substr(1, body_size - 1);
  const uint8_t mode_byte = uint8_t(body[0]);
  body.remove_prefix(1);
  if (mode_byte > uint8_t(ValueMode::kFloat64Delta)) {
    return Corrupt("unknown value mode " + std::to_string(mode_byte));
  }
  const ValueMode mode = ValueMode(mode_byte);
  uint64_t count = 0;
  if (!coding::GetVarint64(&body, &count)) return Corrupt("truncated header");
  if (count > uint64_t(kMaxChunkPoints)) {
    return Corrupt("point count " + std::to_string(count) + " exceeds the maximum");
  }
  const size_t n = size_t(count);
  if (n == 0) return body.empty() ? Status::Ok() : Corrupt("bytes after an empty chunk");
  StreamHeader steps, times, values;
  if (!ParseStreamHeader(&body, n, &steps) || !ParseStreamHeader(&body, n, &times)) {
    return Corrupt("bad step or time stream header");
  }
  const bool xor_mode = mode == ValueMode::kXor32 || mode == ValueMode::kXor64;
  if (!xor_mode && !ParseStreamHeader(&body, n, &values)) {
    return Corrupt("bad value stream header");
  }
  out->resize(n);
  store::Point* p = out->data();
  BitReader r(body.data(), body.size());
  DecodeStream(steps, n, &r, [p](size_t i, uint64_t x) { p[i].step = int64_t(x); });
  DecodeStream(times, n, &r, [p](size_t i, uint64_t x) { p[i].time_ms = int64_t(x); });
  bool values_ok = true;
  switch (mode) {
    case ValueMode::kXor64:
      values_ok = XorDecode<64>(&r, n, [p](size_t i, uint64_t b) {
        p[i].value = coding::BitsDouble(b);
      });
      break;
    case ValueMode::kXor32:
      values_ok = XorDecode<32>(&r, n, [p](size_t i, uint64_t b) {
        p[i].value = coding::BitsDouble(FromFloat32Bits(uint32_t(b)));
      });
      break;
    case ValueMode::kInteger:
      DecodeStream(values, n, &r, [p, &values_ok](size_t i, uint64_t x) {
        const int64_t v = int64_t(x);
        if (v < -(int64_t{1} << 53) || v > (int64_t{1} << 53)) values_ok = false;
        p[i].value = static_cast<double>(v);
      });
      break;
    case ValueMode::kFloat32Delta:
      DecodeStream(values, n, &r, [p, &values_ok](size_t i, uint64_t x) {
        uint32_t f = 0;
        if (!FromOrdered32(int64_t(x), &f)) values_ok = false;
        p[i].value = coding::BitsDouble(FromFloat32Bits(f));
      });
      break;
    case ValueMode::kFloat64Delta:
      DecodeStream(values, n, &r, [p](size_t i, uint64_t x) {
        p[i].value = coding::BitsDouble(FromOrdered64(int64_t(x)));
      });
      break;
  }
  if (r.overrun()) return Corrupt("payload truncated");
  if (!values_ok) return Corrupt("value out of range for its mode");
  if (!r.AtCleanEnd()) return Corrupt("trailing bytes after the payload");
  return Status::Ok();
}

}  // namespace

Status DecodeChunkInto(std::string_view encoded, std::vector<store::Point>* out) {
  out->clear();
  Status s = DecodeBody(encoded, out);
  if (!s.ok()) out->clear();
  return s;
}

}  // namespace cohort::series
