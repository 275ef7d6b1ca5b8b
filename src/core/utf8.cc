#include "core/utf8.h"

#include <cstdint>

namespace cohort::utf8 {
namespace {

// The length of the well-formed sequence at p (p < end), or 0 when it is not one.
size_t SequenceLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = *p;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (size_t(end - p) < n || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  }
  return n;
}

}  // namespace

bool IsValid(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    const size_t n = SequenceLength(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

void AppendSanitized(std::string_view s, size_t max_bytes, std::string* out) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  const auto* begin = reinterpret_cast<const unsigned char*>(s.data());
  const auto* p = begin;
  const auto* end = p + s.size();
  size_t written = 0;
  while (p < end) {
    const size_t n = SequenceLength(p, end);
    const size_t add = n == 0 ? kReplacement.size() : n;
    if (written + add > max_bytes) break;
    if (n == 0) {
      out->append(kReplacement);
      ++p;
    } else {
      out->append(reinterpret_cast<const char*>(p), n);
      p += n;
    }
    written += add;
  }
}

}  // namespace cohort::utf8
