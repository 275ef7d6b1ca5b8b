#include "series/scaled.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/coding.h"

namespace cohort::series::internal {
namespace {

constexpr int kSamples = 32;  // values sampled to find the divisor
// The largest denominator searched: decimals of 6 places, counts up to a million. (Not more:
// every float32 is a ratio with a power-of-two denominator, and those have their own modes.)
constexpr uint64_t kMaxSampleDenominator = 1u << 20;
constexpr double kLimit = 9007199254740992.0;  // 2^53

// The integer x with x / d == v bit for bit, if there is one in [-2^53, 2^53].
inline bool Scale(double v, double dd, int64_t* x) {
  const double r = std::nearbyint(v * dd);
  if (!(r >= -kLimit && r <= kLimit)) return false;  // NaN and infinities fail too
  const auto i = static_cast<int64_t>(r);
  if (coding::DoubleBits(ScaledValue(i, dd)) != coding::DoubleBits(v)) return false;
  *x = i;
  return true;
}

// The smallest denominator q <= kMaxSampleDenominator with v == round(v q) / q exactly, among
// the convergents of v's continued fraction (computed in doubles: they drift after many terms,
// but a candidate is only taken once checked exactly).
bool SmallestDenominator(double v, uint64_t* q) {
  int64_t x;
  if (Scale(v, 1.0, &x)) {
    *q = 1;
    return true;
  }
  double a = std::fabs(v);
  if (!(a < kLimit) || a == 0) return false;
  // Denominators of the last two convergents: q(-2) = 1, q(-1) = 0, q(k) = a(k) q(k-1) + q(k-2).
  uint64_t q_prev = 1, q_cur = 0;
  for (int term = 0; term < 40; ++term) {
    const double whole = std::floor(a);
    if (whole * double(q_cur) + double(q_prev) > double(kMaxSampleDenominator)) return false;
    const uint64_t next = uint64_t(whole) * q_cur + q_prev;
    q_prev = q_cur;
    q_cur = next;
    if (term > 0 && Scale(v, double(q_cur), &x)) {
      *q = q_cur;
      return true;
    }
    const double frac = a - whole;
    if (frac <= 0) return false;
    a = 1 / frac;
  }
  return false;
}

// d = 2^a 5^b -> 10^max(a, b) (the power of ten that d divides), else 0.
uint64_t PowerOfTenAbove(uint64_t d) {
  int twos = 0, fives = 0;
  while (d % 2 == 0) d /= 2, ++twos;
  while (d % 5 == 0) d /= 5, ++fives;
  if (d != 1) return 0;
  const int e = std::max(twos, fives);
  if (e > 15) return 0;
  uint64_t p = 1;
  for (int i = 0; i < e; ++i) p *= 10;
  return p;
}

}  // namespace

int CandidateDivisors(const double* v, size_t n, uint64_t* out, int max) {
  if (n == 0 || max <= 0) return 0;
  NearestRounding rounding;
  const size_t take = std::min<size_t>(n, kSamples);
  uint64_t lcm = 1;
  int found = 0, missed = 0;
  for (size_t j = 0; j < take; ++j) {
    const double x = v[j * n / take];
    uint64_t q;
    if (!SmallestDenominator(x, &q)) {
      // Non-finite values and -0.0 are exceptions of any divisor; anything else unexplained in
      // the sample would be one too: not worth a try when that is a quarter of the sample.
      if (++missed * 4 > int(take)) return 0;
      continue;
    }
    ++found;
    const uint64_t g = std::gcd(lcm, q);
    if (__builtin_mul_overflow(lcm / g, q, &lcm) || lcm > kMaxDivisor) return 0;
  }
  if (found == 0) return 0;
  int count = 0;
  out[count++] = lcm;
  const uint64_t ten = PowerOfTenAbove(lcm);
  if (ten != 0 && ten != lcm && count < max) out[count++] = ten;
  return count;
}

bool ScaleValues(const double* v, size_t n, uint64_t d, size_t max_exceptions, int64_t* x,
                 std::vector<uint16_t>* exceptions) {
  NearestRounding rounding;
  exceptions->clear();
  const double dd = double(d);
  size_t leading = 0;  // exceptions before the first scaled value
  bool any = false;
  int64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    if (Scale(v[i], dd, &x[i])) {
      if (!any) {
        std::fill(x, x + leading, x[i]);
        any = true;
      }
      prev = x[i];
      continue;
    }
    if (exceptions->size() == max_exceptions) return false;
    exceptions->push_back(uint16_t(i));
    x[i] = prev;
    if (!any) ++leading;
  }
  return any;
}

}  // namespace cohort::series::internal
