// Gorilla XOR coding of W-bit value patterns (W = 64 for doubles, 32 for float32) inside a chunk
// (docs/formats.md, "Series chunks"). The first pattern is written in full; then each pattern's
// XOR with the previous one as
//   "0"                      equal to the previous pattern
//   "10" + bits              the XOR's meaningful bits fit the current window: the window's bits
//   "11" + lead + len-1 + bits   a new window: leading zero count and meaningful length in L bits
//                            each (L = 6 for W = 64, 5 for W = 32), then the meaningful bits.
// Control bits are listed in stream order (the first is the lowest bit written). The window
// starts as the whole word; the encoder opens a new window when that is cheaper than reusing.
// Internal to src/series.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "series/bits.h"

namespace cohort::series::internal {

// Writes patterns v[0..n), n >= 1, through `w` (a BitWriter or a BitCounter).
template <int W, typename Writer>
void XorEncode(const uint64_t* v, size_t n, Writer* w) {
  constexpr int kL = W == 64 ? 6 : 5;
  w->Write(v[0], W);
  int prev_lead = 0, prev_trail = 0;
  for (size_t i = 1; i < n; ++i) {
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
      w->Write(0b11 | uint64_t(lead) << 2 | uint64_t(len - 1) << (2 + kL), 2 + 2 * kL);
      w->Write(x >> trail, len);
      prev_lead = lead;
      prev_trail = trail;
    }
  }
}

// Decodes n >= 1 patterns, calling emit(i, pattern). False on an impossible window.
template <int W, typename Emit>
bool XorDecode(BitReader* reader, size_t n, Emit emit) {
  constexpr int kL = W == 64 ? 6 : 5;
  BitReader local = *reader;  // in registers: emit's stores could alias *reader
  BitReader* r = &local;
  struct WriteBack {
    BitReader* from;
    BitReader* to;
    ~WriteBack() { *to = *from; }
  } write_back{r, reader};
  uint64_t prev = r->ReadLong(W);
  emit(0, prev);
  int prev_lead = 0, prev_trail = 0;
  for (size_t i = 1; i < n; ++i) {
    const uint64_t p = r->Peek(2 + 2 * kL);
    if ((p & 1) == 0) {
      r->Consume(1);
    } else if ((p & 2) == 0) {
      r->Consume(2);
      prev ^= r->ReadLong(W - prev_lead - prev_trail) << prev_trail;
    } else {
      r->Consume(2 + 2 * kL);
      const int lead = int(p >> 2) & ((1 << kL) - 1);
      const int len = (int(p >> (2 + kL)) & ((1 << kL) - 1)) + 1;
      if (lead + len > W) return false;
      prev_lead = lead;
      prev_trail = W - lead - len;
      prev ^= r->ReadLong(len) << prev_trail;
    }
    emit(i, prev);
  }
  return true;
}

}  // namespace cohort::series::internal
