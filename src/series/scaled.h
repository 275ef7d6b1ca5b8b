// The scaled value mode of the chunk codec (docs/formats.md, "Series chunks", mode 5): values
// that are integers divided by one integer divisor D per chunk, v = x / D, each x an integer in
// [-2^53, 2^53], the division IEEE-754 double division rounded to nearest. Decimals with a few
// places are the case D = 10^e (0.937 = 937 / 1000, exactly: a correctly rounded division of
// the digits gives the double nearest the decimal, which is what parsing or round() produced);
// ratios of counts (accuracy = correct / 360, 100.0 * k / 360) are the case of any other D. Values
// that are not x / D (NaN, infinities, -0.0, the odd other value) are exceptions, kept as their
// 64-bit patterns beside the integers. This is ALP's idea (Afroozeh, Kuffo, Boncz, SIGMOD 2024)
// with a division instead of a multiplication by an inexact 10^-e, so that every short decimal
// round-trips without exceptions, and with the divisor found from the values (continued
// fractions of a sample) rather than searched among powers of ten.
//
// Decoding needs the default rounding mode (round to nearest); FTZ/DAZ cannot matter (x and D
// are exact integers, |x / D| >= 2^-53 or zero). Internal to src/series; pure functions and
// plain values.
#pragma once

#include <cfenv>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cohort::series::internal {

inline constexpr uint64_t kMaxDivisor = uint64_t{1} << 53;

// Sets the rounding mode to round-to-nearest for its lifetime when it is not (restoring it after):
// the scaled mode's divisions, on both sides, are defined in that mode.
class NearestRounding {
 public:
  NearestRounding() : saved_(std::fegetround()) {
    if (saved_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  }
  ~NearestRounding() {
    if (saved_ != FE_TONEAREST) std::fesetround(saved_);
  }
  NearestRounding(const NearestRounding&) = delete;
  NearestRounding& operator=(const NearestRounding&) = delete;

 private:
  int saved_;
};

// The value of integer x (|x| <= 2^53) over divisor d (1..2^53), under NearestRounding.
inline double ScaledValue(int64_t x, double divisor) { return static_cast<double>(x) / divisor; }

// Up to `max` divisors worth pricing for values v[0..n) (most promising first); none when too
// few sampled values are ratios of integers with a small denominator.
int CandidateDivisors(const double* v, size_t n, uint64_t* out, int max);

// For divisor d: x[i] = the integer with x[i] / d == v[i] bit for bit, or, for an exception, a
// filler (the previous non-exception integer, the first one for leading exceptions) that keeps
// the integer stream smooth; the exceptions' positions go to *exceptions (cleared first).
// Returns false when more than max_exceptions values are exceptions (then x is unspecified).
bool ScaleValues(const double* v, size_t n, uint64_t d, size_t max_exceptions, int64_t* x,
                 std::vector<uint16_t>* exceptions);

}  // namespace cohort::series::internal
