// Gorilla as published (Pelkonen et al., "Gorilla: A Fast, Scalable, In-Memory Time Series
// Database", VLDB 2015, section 4.1), the reference codec of bench/corpus_bench.cc. Written here
// from the paper's description, per block of points:
//   header     the point count (16 bits), the first step, time and value (64 bits each)
//   steps      delta of delta D against the previous delta (the first delta against 0):
//   times        '0' (D = 0), '10' + 7 bits (D in [-63, 64]), '110' + 9 bits ([-255, 256]),
//                '1110' + 12 bits ([-2047, 2048]), '1111' + the rest. The paper's last bucket has
//                32 bits; here 64, so that any int64 sequence round-trips.
//   values     the XOR with the previous value: '0' (equal), '10' + the meaningful bits when they
//              fit the previous window, '11' + 5 bits of leading zeros (at most 31) + 6 bits of
//              meaningful length (64 written as 0) + the meaningful bits.
// The paper has no step column; steps get the timestamps' coding. Bits are packed with
// series/bits.h (least-significant bit first); the order does not change the size.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "series/bits.h"

namespace cohort::bench {

struct RawPoint {
  int64_t step = 0, time_ms = 0;
  uint64_t bits = 0;  // the value's IEEE-754 pattern
};

namespace gorilla_detail {

// Appends one delta of delta. The bucket ranges are the paper's, written zigzag-free as a
// two's-complement field of the bucket's width (D - lo in [0, 2^width)).
template <typename W>
void PutDod(W* w, int64_t dod) {
  if (dod == 0) {
    w->Write(0, 1);
  } else if (dod >= -63 && dod <= 64) {
    w->Write(0b01, 2);
    w->Write(uint64_t(dod + 63), 7);
  } else if (dod >= -255 && dod <= 256) {
    w->Write(0b011, 3);
    w->Write(uint64_t(dod + 255), 9);
  } else if (dod >= -2047 && dod <= 2048) {
    w->Write(0b0111, 4);
    w->Write(uint64_t(dod + 2047), 12);
  } else {
    w->Write(0b1111, 4);
    w->Write(uint64_t(dod), 64);
  }
}

inline int64_t GetDod(series::internal::BitReader* r) {
  if (r->Read(1) == 0) return 0;
  if (r->Read(1) == 0) return int64_t(r->Read(7)) - 63;
  if (r->Read(1) == 0) return int64_t(r->Read(9)) - 255;
  if (r->Read(1) == 0) return int64_t(r->Read(12)) - 2047;
  return int64_t(r->ReadLong(64));
}

}  // namespace gorilla_detail

// Encodes points p[0..n), 1 <= n < 2^16, appending the block to *out.
inline void GorillaEncode(const RawPoint* p, size_t n, std::string* out) {
  using namespace gorilla_detail;
  const size_t start = out->size();
  out->resize(start + 16 + n * 32 + 16);  // a bound on the block, and slack for the writer
  series::internal::BitWriter w(out->data() + start);
  w.Write(n, 16);
  w.Write(uint64_t(p[0].step), 64);
  w.Write(uint64_t(p[0].time_ms), 64);
  w.Write(p[0].bits, 64);
  int64_t step_delta = 0, time_delta = 0;
  int lead = -1, trail = 0;  // the current window; none yet
  for (size_t i = 1; i < n; ++i) {
    const int64_t sd = int64_t(uint64_t(p[i].step) - uint64_t(p[i - 1].step));
    const int64_t td = int64_t(uint64_t(p[i].time_ms) - uint64_t(p[i - 1].time_ms));
    PutDod(&w, int64_t(uint64_t(sd) - uint64_t(step_delta)));
    PutDod(&w, int64_t(uint64_t(td) - uint64_t(time_delta)));
    step_delta = sd;
    time_delta = td;
    const uint64_t x = p[i].bits ^ p[i - 1].bits;
    if (x == 0) {
      w.Write(0, 1);
      continue;
    }
    int l = std::countl_zero(x);
    const int t = std::countr_zero(x);
    if (l > 31) l = 31;
    if (lead >= 0 && l >= lead && t >= trail) {
      w.Write(0b01, 2);
      w.Write(x >> trail, 64 - lead - trail);
    } else {
      const int len = 64 - l - t;
      w.Write(0b11, 2);
      w.Write(uint64_t(l), 5);
      w.Write(uint64_t(len & 63), 6);
      w.Write(x >> t, len);
      lead = l;
      trail = t;
    }
  }
  out->resize(size_t(w.Finish() - out->data()));
}

// Decodes one block from `data`, appending its points to *out; false on a malformed block.
inline bool GorillaDecode(const std::string& data, std::vector<RawPoint>* out) {
  using namespace gorilla_detail;
  series::internal::BitReader r(data.data(), data.size());
  const size_t n = size_t(r.Read(16));
  if (n == 0) return false;
  RawPoint p;
  p.step = int64_t(r.ReadLong(64));
  p.time_ms = int64_t(r.ReadLong(64));
  p.bits = r.ReadLong(64);
  out->push_back(p);
  int64_t step_delta = 0, time_delta = 0;
  int lead = 0, trail = 0;
  for (size_t i = 1; i < n; ++i) {
    step_delta = int64_t(uint64_t(step_delta) + uint64_t(GetDod(&r)));
    time_delta = int64_t(uint64_t(time_delta) + uint64_t(GetDod(&r)));
    p.step = int64_t(uint64_t(p.step) + uint64_t(step_delta));
    p.time_ms = int64_t(uint64_t(p.time_ms) + uint64_t(time_delta));
    if (r.Read(1) != 0) {
      if (r.Read(1) != 0) {
        lead = int(r.Read(5));
        int len = int(r.Read(6));
        if (len == 0) len = 64;
        if (lead + len > 64) return false;
        trail = 64 - lead - len;
      }
      p.bits ^= r.ReadLong(64 - lead - trail) << trail;
    }
    out->push_back(p);
  }
  return !r.overrun();
}

}  // namespace cohort::bench
