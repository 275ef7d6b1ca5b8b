// cohort::Histogram: one histogram value of the client library's log API (cohort.h) and of the
// whole data path (batch format, store, routes). Plain value type; no third-party types.
#pragma once

#include <vector>

namespace cohort {

// n bins (n = counts.size(), 1..512, core/limits.h kMaxHistogramBins) with their counts (finite,
// >= 0). The bins are either uniform over [lo, hi] (edges empty; lo < hi, both finite) or lie
// between n + 1 explicit edges (finite, strictly ascending; lo and hi are then ignored).
struct Histogram {
  double lo = 0;
  double hi = 0;
  std::vector<double> edges;
  std::vector<double> counts;

  bool uniform() const { return edges.empty(); }
  size_t bins() const { return counts.size(); }
  // The lowest and highest edge.
  double low() const { return edges.empty() ? lo : edges.front(); }
  double high() const { return edges.empty() ? hi : edges.back(); }
  // Edge i of 0..bins().
  double edge(size_t i) const {
    if (!edges.empty()) return edges[i];
    if (i == counts.size()) return hi;
    const double scaled = (hi - lo) * double(i);
    if (scaled <= 1.7976931348623157e308) return lo + scaled / double(counts.size());
    // A span wider than the largest double (lo -1e308, hi 1e308): halves do not overflow.
    return lo + (hi / 2 - lo / 2) * (2.0 * double(i) / double(counts.size()));
  }
};

}  // namespace cohort
