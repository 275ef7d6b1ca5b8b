// Residual streams: the coding of a sequence of int64 (steps, times, and values in the integer
// and delta modes) inside a chunk (docs/formats.md, "Series chunks").
//
// A stream of n values x[0..n) is coded as a small byte header (order, classes, x[0], for order 2
// the first delta, and a base) and n - order residuals in the chunk's bit payload:
//   order 1: r[i] = (x[i] - x[i-1]) - base                          for i in [1, n)
//   order 2: r[i] = ((x[i] - x[i-1]) - (x[i-1] - x[i-2])) - base    for i in [2, n)
// in wrapping 64-bit arithmetic, so any int64 sequence round-trips. Each residual is zigzagged
// and written as a class prefix (truncated unary over k <= 5 classes: "0", "10", "110", ...; the
// last class has no terminating 0) and then the class's width in bits. The encoder fits order,
// base and class widths to each stream: a stream of equal deltas costs no payload bits at all.
// Internal to src/series; pure functions and plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/coding.h"
#include "series/bits.h"

namespace cohort::series::internal {

inline constexpr int kMaxClasses = 5;
inline constexpr int kMaxWidth = 64;

struct StreamCode {
  int order = 1;                     // 1: deltas; 2: deltas of deltas
  int k = 1;                         // classes, 1..kMaxClasses
  uint8_t widths[kMaxClasses] = {};  // bits per class, strictly increasing, <= kMaxWidth
  int64_t base = 0;                  // subtracted from every difference before zigzag
  uint64_t payload_bits = 0;         // when planned: bits of the residuals
  uint64_t header_bytes = 0;         // when planned: bytes of WriteStreamHeader
};

// Picks order, base and classes for x[0..n), n >= 1, minimising header and payload size.
StreamCode PlanStream(const int64_t* x, size_t n);
void WriteStreamHeader(const StreamCode& c, const int64_t* x, size_t n, std::string* out);
// Writes the residuals of x[0..n) as planned by PlanStream.
void WriteStreamBits(const StreamCode& c, const int64_t* x, size_t n, BitWriter* w);

struct StreamHeader {
  StreamCode code;
  uint64_t x0 = 0, d0 = 0;
};
// Parses a stream header of an n-value stream from the front of `in`; false when malformed.
bool ParseStreamHeader(std::string_view* in, size_t n, StreamHeader* h);

// Per-prefix decoding table: indexed by the next 4 payload bits.
struct DecodeTable {
  uint8_t shift[16];   // prefix bits
  uint8_t width[16];   // value bits
  uint8_t total[16];   // prefix + value bits
  uint64_t mask[16];   // (1 << width) - 1
};
DecodeTable MakeDecodeTable(const StreamCode& c);

// Decodes n >= 1 values of a stream, calling emit(i, x) for each in order.
template <typename Emit>
void DecodeStream(const StreamHeader& h, size_t n, BitReader* r, Emit emit) {
  const StreamCode& c = h.code;
  const uint64_t base = uint64_t(c.base);
  uint64_t x = h.x0;
  emit(0, x);
  if (n < 2) return;
  const bool constant = c.k == 1 && c.widths[0] == 0;  // every residual is zero
  const DecodeTable t = MakeDecodeTable(c);
  auto next = [&] {
    return constant ? base : base + uint64_t(coding::UnZigZag(r->ReadCoded(t)));
  };
  if (c.order == 1) {
    for (size_t i = 1; i < n; ++i) {
      x += next();
      emit(i, x);
    }
    return;
  }
  uint64_t d = h.d0;
  x += d;
  emit(1, x);
  for (size_t i = 2; i < n; ++i) {
    d += next();
    x += d;
    emit(i, x);
  }
}

}  // namespace cohort::series::internal
