#include "core/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/coding.h"
#include "core/limits.h"

namespace cohort::histogram {
namespace {

constexpr uint8_t kVarintCounts = 0;
constexpr uint8_t kDoubleCounts = 1;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

std::string Num(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

}  // namespace

std::string BinCountReason(size_t n) {
  if (n == 0) return "a histogram needs at least one bin";
  if (n > limits::kMaxHistogramBins) {
    return std::to_string(n) + " bins, more than the limit of " +
           std::to_string(limits::kMaxHistogramBins);
  }
  return "";
}

std::string InvalidReason(const Histogram& h) {
  const size_t n = h.counts.size();
  if (std::string why = BinCountReason(n); !why.empty()) return why;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(h.counts[i]) || h.counts[i] < 0) {
      return "count " + std::to_string(i) + " is " + Num(h.counts[i]) +
             " (counts must be finite and >= 0)";
    }
  }
  if (h.edges.empty()) {
    if (!std::isfinite(h.lo) || !std::isfinite(h.hi)) return "the range must be finite";
    if (!(h.lo < h.hi)) return "the range [" + Num(h.lo) + ", " + Num(h.hi) + "] is empty";
    return "";
  }
  if (h.edges.size() != n + 1) {
    return std::to_string(n) + " counts but " + std::to_string(h.edges.size()) + " edges (need " +
           std::to_string(n + 1) + ")";
  }
  for (size_t i = 0; i <= n; ++i) {
    if (!std::isfinite(h.edges[i])) return "edge " + std::to_string(i) + " is not finite";
    if (i > 0 && !(h.edges[i] > h.edges[i - 1])) {
      return "edges must be strictly ascending (edge " + std::to_string(i) + " is " +
             Num(h.edges[i]) + ", after " + Num(h.edges[i - 1]) + ")";
    }
  }
  return "";
}

void EncodeCounts(std::span<const double> counts, std::string* out) {
  bool integers = true;
  for (double c : counts) {
    if (!(c >= 0 && c <= kMaxExactInteger && c == std::floor(c)) || std::signbit(c)) {
      integers = false;
      break;
    }
  }
  if (integers) {
    out->push_back(char(kVarintCounts));
    for (double c : counts) coding::PutVarint64(out, uint64_t(c));
    return;
  }
  out->push_back(char(kDoubleCounts));
  for (double c : counts) coding::PutFixed64(out, coding::DoubleBits(c));
}

Result<std::vector<double>> DecodeCounts(std::string_view blob, size_t n) {
  if (blob.empty()) return Status::Corruption("histogram counts: empty");
  const uint8_t tag = uint8_t(blob[0]);
  blob.remove_prefix(1);
  std::vector<double> out;
  out.reserve(n);
  if (tag == kVarintCounts) {
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = 0;
      if (!coding::GetVarint64(&blob, &v)) return Status::Corruption("histogram counts: truncated");
      out.push_back(double(v));
    }
  } else if (tag == kDoubleCounts) {
    if (blob.size() < n * 8) return Status::Corruption("histogram counts: truncated");
    for (size_t i = 0; i < n; ++i) {
      out.push_back(coding::BitsDouble(coding::DecodeFixed64(blob.data() + 8 * i)));
    }
    blob.remove_prefix(n * 8);
  } else {
    return Status::Corruption("histogram counts: unknown form " + std::to_string(tag));
  }
  if (!blob.empty()) return Status::Corruption("histogram counts: trailing bytes");
  return out;
}

std::string EncodeEdges(std::span<const double> edges) {
  std::string out;
  out.reserve(edges.size() * 8);
  for (double e : edges) coding::PutFixed64(&out, coding::DoubleBits(e));
  return out;
}

Result<std::vector<double>> DecodeEdges(std::string_view blob) {
  if (blob.size() % 8 != 0) return Status::Corruption("histogram edges: not a multiple of 8 bytes");
  std::vector<double> out(blob.size() / 8);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = coding::BitsDouble(coding::DecodeFixed64(blob.data() + 8 * i));
  }
  return out;
}

bool SameBins(const Histogram& a, const Histogram& b) {
  if (a.counts.size() != b.counts.size() || a.uniform() != b.uniform()) return false;
  if (a.uniform()) return a.lo == b.lo && a.hi == b.hi;
  return a.edges == b.edges;
}

namespace {

// Counts are finite (ValidationError): so is their sum, at most the largest double.
double CappedSum(double a, double b) { return std::min(a + b, std::numeric_limits<double>::max()); }

}  // namespace

Histogram Merge(std::span<const Histogram* const> parts, bool* exact) {
  Histogram out;
  *exact = true;
  if (parts.empty()) return out;
  const Histogram& first = *parts[0];
  bool same = true;
  for (const Histogram* p : parts) same = same && SameBins(first, *p);
  if (same) {
    out = first;
    for (size_t k = 1; k < parts.size(); ++k) {
      for (size_t i = 0; i < out.counts.size(); ++i) {
        out.counts[i] = CappedSum(out.counts[i], parts[k]->counts[i]);
      }
    }
    return out;
  }
  *exact = false;
  size_t bins = 0;
  double lo = first.low(), hi = first.high();
  for (const Histogram* p : parts) {
    bins = std::max(bins, p->bins());
    lo = std::min(lo, p->low());
    hi = std::max(hi, p->high());
  }
  out.lo = lo;
  out.hi = hi;
  out.counts.assign(bins, 0.0);
  const double width = (hi - lo) / double(bins);
  // Edges are finite, but a span may be wider than the largest double (lo -1e308, hi 1e308):
  // then positions and overlaps are taken in halves (else every one of them is NaN).
  const bool halves = !std::isfinite(hi - lo);
  const double half_width = (hi / 2 - lo / 2) / double(bins);
  auto position = [&](double x) {
    return halves ? (x / 2 - lo / 2) / half_width : (x - lo) / width;
  };
  for (const Histogram* p : parts) {
    for (size_t i = 0; i < p->bins(); ++i) {
      const double c = p->counts[i];
      if (c == 0) continue;
      const double a = p->edge(i), b = p->edge(i + 1);
      // The target bins [a, b) overlaps, each given the share of its overlap.
      size_t t = size_t(std::clamp(position(a), 0.0, double(bins - 1)));
      const size_t last = size_t(std::clamp(position(b), 0.0, double(bins - 1)));
      for (; t <= last; ++t) {
        const double tlo = halves ? out.edge(t) : lo + width * double(t);
        const double thi = t + 1 == bins ? hi : halves ? out.edge(t + 1) : tlo + width;
        const double overlap = halves ? std::min(b, thi) / 2 - std::max(a, tlo) / 2
                                      : std::min(b, thi) - std::max(a, tlo);
        if (overlap <= 0) continue;
        const double add = halves ? c * (overlap / (b / 2 - a / 2)) : c * overlap / (b - a);
        out.counts[t] = CappedSum(out.counts[t], add);
      }
    }
  }
  return out;
}

}  // namespace cohort::histogram
