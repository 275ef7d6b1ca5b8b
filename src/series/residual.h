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

// How to decode one residual stream: fast paths for streams of equal deltas (no payload), one
// class (fixed width) and two classes; a table for more. Immutable once built.
struct StreamLayout {
  explicit StreamLayout(const StreamHeader& h);

  enum class Kind : uint8_t { kConstant, kFixed, kTwoClass, kTable };
  Kind kind;
  bool order2;
  uint64_t x0, d0;
  uint64_t base;
  uint64_t order2_mask;    // all ones for order 2 (the delta carries over), zero for order 1
  int width = 0;           // kFixed
  uint8_t total0 = 0, total1 = 0;  // kTwoClass: prefix + value bits of each class
  uint64_t mask0 = 0, mask1 = 0;   // kFixed, kTwoClass: value masks
  DecodeTable table = {};  // kTable
};

// Reads a residual stream value by value. Only scalars (and a pointer to its layout), so that a
// local StreamDecoder lives in registers; its layout must outlive it.
class StreamDecoder {
 public:
  // `payload` is the stream's own payload bytes.
  StreamDecoder(const StreamLayout& layout, std::string_view payload)
      : layout_(&layout),
        r_(payload.data(), payload.size()),
        x_(layout.x0),
        d_(layout.order2 ? layout.d0 : 0) {}

  uint64_t First() const { return x_; }  // value 0
  // Value 1: for order 2 it is x[0] + d0 and reads nothing.
  COHORT_SERIES_INLINE uint64_t Second() { return layout_->order2 ? (x_ += d_) : Next(); }
  // Values 2, 3, ... in order (and value 1 of an order-1 stream, through Second()).
  COHORT_SERIES_INLINE uint64_t Next() {
    const StreamLayout& l = *layout_;
    uint64_t z;
    switch (l.kind) {
      case StreamLayout::Kind::kConstant: z = 0; break;
      case StreamLayout::Kind::kFixed: z = r_.ReadFixed(l.width, l.mask0); break;
      case StreamLayout::Kind::kTwoClass:
        z = r_.ReadTwoClass(l.total0, l.total1, l.mask0, l.mask1);
        break;
      default: z = r_.ReadCoded(l.table); break;
    }
    d_ = (d_ & l.order2_mask) + l.base + uint64_t(coding::UnZigZag(z));
    x_ += d_;
    return x_;
  }
  // True when the payload held exactly the stream's bits (after every value was read).
  bool Finish() { return r_.AtCleanEnd(); }

 private:
  const StreamLayout* layout_;
  BitReader r_;
  uint64_t x_, d_;
};

// Decodes n >= 1 values of a stream, calling emit(i, x) for each in order.
template <typename Emit>
void DecodeStream(const StreamHeader& h, size_t n, std::string_view payload, bool* ok,
                  Emit emit) {
  const StreamLayout layout(h);
  StreamDecoder d(layout, payload);
  emit(0, d.First());
  if (n >= 2) emit(1, d.Second());
  for (size_t i = 2; i < n; ++i) emit(i, d.Next());
  *ok = d.Finish();
}

}  // namespace cohort::series::internal
