// Residual streams: the coding of a sequence of int64 (steps, times, and values in the integer
// and delta modes) inside a chunk (docs/formats.md, "Series chunks").
//
// A stream of n values x[0..n) is coded as a small byte header (order, classes, for orders 1 and 2
// x[0], for order 2 the first delta, and a base) and m = n - order residuals in the stream's
// payload:
//   order 0: r[i] = x[i] - base                                     for i in [0, n)
//   order 1: r[i] = (x[i] - x[i-1]) - base                          for i in [1, n)
//   order 2: r[i] = ((x[i] - x[i-1]) - (x[i-1] - x[i-2])) - base    for i in [2, n)
// in wrapping 64-bit arithmetic, so any int64 sequence round-trips. Order 0 is frame of
// reference: base is the minimum and r[i] is written as it is (unsigned); the residuals of orders
// 1 and 2 are zigzagged. Each falls in the first of k <= 8 classes whose width (bits) holds it. The
// payload is the class selectors (s = bit width of k-1 bits each: none for k = 1, 1 bit for k = 2,
// 2 bits for k <= 4, 3 bits for k <= 8), zero-padded to a byte, then every residual in its class's
// width, zero-padded to a byte; bits are packed least-significant first. Fixed-width selectors put
// every selector, and every value once the widths before it are summed, at a computable position,
// so a decoder has no chain of dependent variable-length reads. The encoder fits order, base, k and
// the class widths to each stream: a stream of equal deltas has an empty payload.
// Internal to src/series; pure functions and plain values.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/coding.h"
#include "series/bits.h"

namespace cohort::series::internal {

inline constexpr int kMaxClasses = 8;
inline constexpr int kMaxWidth = 64;

struct StreamCode {
  int order = 1;                     // 0: frame of reference; 1: deltas; 2: deltas of deltas
  int k = 1;                         // classes, 1..kMaxClasses
  uint8_t widths[kMaxClasses] = {};  // bits per class, strictly increasing, <= kMaxWidth
  int64_t base = 0;                  // subtracted from every difference before zigzag
  // When planned: payload size (selector and value bits) and header size.
  uint64_t selector_bits = 0, value_bits = 0;
  uint64_t header_bytes = 0;

  int selector_width() const { return std::bit_width(unsigned(k - 1)); }
  uint64_t payload_bytes() const { return (selector_bits + 7) / 8 + (value_bits + 7) / 8; }
  uint64_t total_bits() const { return 8 * (header_bytes + payload_bytes()); }
};

// Picks order, base and classes for x[0..n), n >= 1, minimising header and payload size. Order 0
// is priced only when `frame_of_reference` (values; steps and times, which grow, never use it).
StreamCode PlanStream(const int64_t* x, size_t n, bool frame_of_reference = true);
void WriteStreamHeader(const StreamCode& c, const int64_t* x, size_t n, std::string* out);
// Writes the payload of x[0..n) as planned by PlanStream: c.payload_bytes() bytes at `dst`.
void WriteStreamPayload(const StreamCode& c, const int64_t* x, size_t n, char* dst);

struct StreamHeader {
  StreamCode code;  // order, k, widths and base
  uint64_t x0 = 0, d0 = 0;
};
// Parses a stream header of an n-value stream from the front of `in`; false when malformed.
bool ParseStreamHeader(std::string_view* in, size_t n, StreamHeader* h);

namespace detail {

// Reads `width` (<= 64) bits at bit `off` of `v`; the bits lie inside [v, v + size), and 8-byte
// loads may reach up to `load_end`.
inline uint64_t Extract(const uint8_t* v, size_t size, const uint8_t* load_end, uint64_t off,
                        int width, uint64_t mask) {
  const size_t byte = size_t(off >> 3);
  const int shift = int(off & 7);
  uint64_t w;
  if (byte + 8 <= size_t(load_end - v) && shift + width <= 64) [[likely]] {
    std::memcpy(&w, v + byte, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return (w >> shift) & mask;
  }
  if (shift + width <= 64) {  // near the end: up to 8 bytes, one at a time
    w = 0;
    for (size_t b = byte, i = 0; b < size && i < 8; ++b, ++i) w |= uint64_t(v[b]) << (8 * i);
    return (w >> shift) & mask;
  }
  unsigned __int128 acc = 0;  // a field of more than 56 bits that is not byte-aligned
  for (size_t b = byte, i = 0; b < size && i < 9; ++b, ++i) {
    acc |= static_cast<unsigned __int128>(v[b]) << (8 * i);
  }
  return uint64_t(acc >> shift) & mask;
}

inline uint64_t Mask(int width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

// True when the `bits`-bit prefix of a `size`-byte region fills it exactly, padding bits zero.
inline bool ExactFit(const uint8_t* p, size_t size, uint64_t bits) {
  if (size != (bits + 7) / 8) return false;
  return bits % 8 == 0 || (p[size - 1] >> (bits % 8)) == 0;
}

// The 64 bits from bit `off` of `v` on (fewer when off is not a multiple of 8); the caller
// checked the 8-byte load against FastBound.
inline uint64_t Load(const uint8_t* v, uint64_t off) {
  uint64_t w;
  std::memcpy(&w, v + (off >> 3), 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w >> (off & 7);
}

// Bits at offsets below the returned bound can be read with one 8-byte Load from `v` without
// reaching `load_end`.
inline uint64_t FastBound(const uint8_t* v, const uint8_t* load_end) {
  return load_end - v >= 8 ? uint64_t(load_end - v - 7) * 8 : 0;
}

// Folds residual z into the running value x (and, for order 2, its difference d).
template <int kOrder>
COHORT_SERIES_INLINE void Integrate(uint64_t z, uint64_t base, uint64_t* x, uint64_t* d) {
  if constexpr (kOrder == 0) {
    *x = base + z;
  } else if constexpr (kOrder == 1) {
    *x += base + uint64_t(coding::UnZigZag(z));
  } else {
    *d += base + uint64_t(coding::UnZigZag(z));
    *x += *d;
  }
}

// The residual loops below keep all their state in locals, so that it stays in registers.

// Residuals of a stream with kSw-bit selectors (k >= 2). kCheck: some selector values are
// invalid (k is not a power of two).
template <int kOrder, int kSw, bool kCheck, typename Emit>
bool DecodeSelected(const uint8_t* p, size_t size, const uint8_t* end, size_t m, int k,
                    const uint8_t* class_widths, uint64_t x, uint64_t d, uint64_t base, size_t i,
                    Emit& emit) {
  constexpr uint64_t kSelectorMask = (uint64_t{1} << kSw) - 1;
  // Selectors per 8-byte load; kGroup * kSw is a multiple of 8, so every load starts on a byte.
  constexpr size_t kGroup = kSw == 3 ? 16 : 64 / kSw;
  const uint64_t selector_bits = uint64_t(kSw) * m;
  const size_t selector_bytes = size_t((selector_bits + 7) / 8);
  if (selector_bytes > size || !ExactFit(p, selector_bytes, selector_bits)) return false;
  const uint8_t* v = p + selector_bytes;
  const size_t value_size = size - selector_bytes;
  // Widths and masks by selector value; values >= k are invalid (flagged, read as width 0).
  uint8_t widths[8] = {};
  uint64_t masks[8] = {};
  for (int c = 0; c < k; ++c) {
    widths[c] = class_widths[c];
    masks[c] = Mask(class_widths[c]);
  }
  uint64_t off = 0;
  unsigned bad = 0;
  size_t j = 0;
  if (class_widths[k - 1] <= 56) {
    // Whole groups of selectors whose 8-byte load stays in bounds, while the values do too.
    const uint64_t selector_bound = FastBound(p, end), value_bound = FastBound(v, end);
    const size_t groups_end = std::min(m, size_t(selector_bound / kSw / kGroup) * kGroup);
    while (j < groups_end && off < value_bound) {
      uint64_t word = Load(p, uint64_t(j) * kSw);
      for (size_t t = 0; t < kGroup && j < groups_end && off < value_bound; ++t, ++j) {
        const unsigned c = unsigned(word & kSelectorMask);
        word >>= kSw;
        if constexpr (kCheck) bad |= c >= unsigned(k);
        Integrate<kOrder>(Load(v, off) & masks[c], base, &x, &d);
        bad |= emit(i++, x);
        off += widths[c];
      }
    }
  }
  for (; j < m; ++j) {
    const unsigned c =
        unsigned(Extract(p, selector_bytes, end, uint64_t(j) * kSw, kSw, kSelectorMask));
    bad |= c >= unsigned(k);
    Integrate<kOrder>(Extract(v, value_size, end, off, widths[c], masks[c]), base, &x, &d);
    bad |= emit(i++, x);
    off += widths[c];
  }
  return !bad && ExactFit(v, value_size, off);
}

// Residuals of a stream without selectors (k = 1): value j is at bit j * w.
template <int kOrder, typename Emit>
bool DecodeFixed(const uint8_t* p, size_t size, const uint8_t* end, size_t m, int w, uint64_t x,
                 uint64_t d, uint64_t base, size_t i, Emit& emit) {
  if (!ExactFit(p, size, uint64_t(w) * m)) return false;
  unsigned bad = 0;
  if (w == 0) {
    for (size_t j = 0; j < m; ++j) {
      Integrate<kOrder>(0, base, &x, &d);
      bad |= emit(i++, x);
    }
    return !bad;
  }
  const uint64_t mask = Mask(w);
  size_t j = 0;
  if (w <= 56) {
    for (const uint64_t bound = FastBound(p, end); j < m && uint64_t(j) * w < bound; ++j) {
      Integrate<kOrder>(Load(p, uint64_t(j) * w) & mask, base, &x, &d);
      bad |= emit(i++, x);
    }
  }
  for (; j < m; ++j) {
    Integrate<kOrder>(Extract(p, size, end, uint64_t(j) * w, w, mask), base, &x, &d);
    bad |= emit(i++, x);
  }
  return !bad;
}

template <int kOrder, typename Emit>
bool DecodeResiduals(const StreamCode& c, const uint8_t* p, size_t size, const uint8_t* end,
                     size_t m, uint64_t x, uint64_t d, size_t i, Emit& emit) {
  const uint64_t base = uint64_t(c.base);
  if (c.k == 1) return DecodeFixed<kOrder>(p, size, end, m, c.widths[0], x, d, base, i, emit);
  auto selected = [&]<int kSw, bool kCheck>() {
    return DecodeSelected<kOrder, kSw, kCheck>(p, size, end, m, c.k, c.widths, x, d, base, i, emit);
  };
  switch (c.k) {
    case 2:
      return selected.template operator()<1, false>();
    case 3:
      return selected.template operator()<2, true>();
    case 4:
      return selected.template operator()<2, false>();
    case 8:
      return selected.template operator()<3, false>();
    default:
      return selected.template operator()<3, true>();
  }
}

}  // namespace detail

// Decodes an n-value stream (n >= 1) from its header and payload, calling emit(i, x) for each
// value in order; emit returns nonzero when x is invalid. `load_end` bounds the 8-byte loads the
// decoder may make past the payload (the end of the buffer holding it). False when the payload
// does not hold exactly the stream or emit rejected a value.
template <typename Emit>
bool DecodeStream(const StreamHeader& h, std::string_view payload, const char* load_end, size_t n,
                  Emit emit) {
  const StreamCode& c = h.code;
  if (load_end - (payload.data() + payload.size()) < 8 && !payload.empty()) {
    // Too little room after the payload for 8-byte loads up to its end: decode a padded copy.
    thread_local std::string padded;
    padded.assign(payload);
    padded.append(8, '\0');
    payload = std::string_view(padded.data(), payload.size());
    load_end = padded.data() + padded.size();
  }
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  const auto* end = reinterpret_cast<const uint8_t*>(load_end);
  if (c.order == 0) return detail::DecodeResiduals<0>(c, p, payload.size(), end, n, 0, 0, 0, emit);
  if (emit(0, h.x0)) return false;
  if (c.order == 1) {
    return detail::DecodeResiduals<1>(c, p, payload.size(), end, n - 1, h.x0, 0, 1, emit);
  }
  if (n < 2) return payload.empty();
  if (emit(1, h.x0 + h.d0)) return false;
  return detail::DecodeResiduals<2>(c, p, payload.size(), end, n - 2, h.x0 + h.d0, h.d0, 2, emit);
}

}  // namespace cohort::series::internal
