// Exact conversions between doubles and the representations the chunk value modes code
// (docs/formats.md, "Series chunks"): float32 patterns, integers, and order-preserving integers.
// They work on bit patterns, so they never depend on the floating-point environment
// (flush-to-zero / denormals-are-zero included). Internal to src/series; pure functions.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/coding.h"

namespace cohort::series::internal {

inline constexpr uint64_t kSignBit = uint64_t{1} << 63;

// The float32 pattern of the double with pattern `d`, if that double is exactly a float32
// (NaNs included when their payload survives dropping its low 29 bits).
inline bool ToFloat32Bits(uint64_t d, uint32_t* f) {
  const uint32_t sign = uint32_t(d >> 63) << 31;
  const int exp = int((d >> 52) & 0x7FF);
  const uint64_t mant = d & ((uint64_t{1} << 52) - 1);
  constexpr uint64_t kLow29 = (uint64_t{1} << 29) - 1;
  const int e = exp - 1023;
  if (e >= -126 && e <= 127) {  // float32 normal
    if (mant & kLow29) return false;
    *f = sign | uint32_t(e + 127) << 23 | uint32_t(mant >> 29);
    return true;
  }
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
  if (e >= -149 && e < -126) {  // float32 denormal: significand * 2^-149
    const int shift = -97 - e;  // 30..52
    const uint64_t sig = mant | (uint64_t{1} << 52);
    if (sig & ((uint64_t{1} << shift) - 1)) return false;
    *f = sign | uint32_t(sig >> shift);
    return true;
  }
  return false;
}

// The double pattern of the float32 pattern `f` (the exact inverse of ToFloat32Bits).
inline uint64_t FromFloat32Bits(uint32_t f) {
  const uint64_t sign = uint64_t(f >> 31) << 63;
  const uint32_t exp = (f >> 23) & 0xFF;
  const uint32_t mant = f & 0x7FFFFF;
  if (exp - 1 < 0xFE) [[likely]] {  // normal: exact in hardware, whatever the FP environment
    float v;
    std::memcpy(&v, &f, 4);
    return coding::DoubleBits(static_cast<double>(v));
  }
  if (exp == 0xFF) return sign | uint64_t{0x7FF} << 52 | uint64_t(mant) << 29;
  if (mant == 0) return sign;
  const int top = 31 - std::countl_zero(mant);  // denormal: 0..22
  const uint64_t frac = (uint64_t(mant) << (52 - top)) & ((uint64_t{1} << 52) - 1);
  return sign | uint64_t(top - 149 + 1023) << 52 | frac;
}

// The integer a double holds, if it is one in [-2^53, 2^53] (and not -0.0).
inline bool ToInteger(double v, int64_t* out) {
  constexpr double kLimit = 9007199254740992.0;      // 2^53
  if (!(v >= -kLimit && v <= kLimit)) return false;  // NaN fails too
  const int64_t i = static_cast<int64_t>(v);
  if (coding::DoubleBits(static_cast<double>(i)) != coding::DoubleBits(v)) return false;
  *out = i;
  return true;
}
inline bool IntegerInRange(int64_t v) { return v >= -(int64_t{1} << 53) && v <= int64_t{1} << 53; }

// Order-preserving signed integers for sign-magnitude float patterns: -0.0 -> -1, +0.0 -> 0,
// and adjacent floats map to adjacent integers, so smooth curves give small differences.
inline int64_t Ordered64(uint64_t b) {
  return (b & kSignBit) ? int64_t{-1} - int64_t(b & ~kSignBit) : int64_t(b);
}
inline uint64_t FromOrdered64(int64_t o) {
  return o < 0 ? kSignBit | uint64_t(int64_t{-1} - o) : uint64_t(o);
}
inline int64_t Ordered32(uint32_t f) {
  return (f >> 31) ? int64_t{-1} - int64_t(f & 0x7FFFFFFFu) : int64_t(f);
}
inline bool FromOrdered32(int64_t o, uint32_t* f) {
  if (o < -(int64_t{1} << 31) || o > int64_t{0x7FFFFFFF}) return false;
  *f = o < 0 ? 0x80000000u | uint32_t(int64_t{-1} - o) : uint32_t(o);
  return true;
}

inline bool IsNan(uint64_t b) { return (b & ~kSignBit) > 0x7FF0000000000000ull; }

}  // namespace cohort::series::internal
