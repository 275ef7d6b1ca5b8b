// Histogram values (include/cohort/histogram.h) for every tier: the one validity rule, the compact
// stored forms of edges and counts, and the merge of neighbouring steps that the histogram query
// uses when a range holds more steps than buckets.
//
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/histogram.h"
#include "cohort/status.h"

namespace cohort::histogram {

// Why `h` is not a valid histogram ("3 counts but 3 edges (need 4)"), or "" when it is: 1 to
// kMaxHistogramBins bins, counts finite and >= 0; uniform: lo < hi, both finite; explicit:
// bins + 1 edges, finite and strictly ascending.
std::string InvalidReason(const Histogram& h);
// Why a histogram cannot have `n` bins ("600 bins, more than the limit of 512"), or "": the
// part of InvalidReason a decoder checks before it reads n counts.
std::string BinCountReason(size_t n);

// Counts as stored: a tag byte, then 0: n varints (every count an integer in [0, 2^53]) or
// 1: n IEEE-754 doubles (LE). Exact either way.
void EncodeCounts(std::span<const double> counts, std::string* out);
// kCorruption naming the problem when `blob` is not `n` encoded counts.
Result<std::vector<double>> DecodeCounts(std::string_view blob, size_t n);
// Explicit edges as stored: n + 1 IEEE-754 doubles (LE).
std::string EncodeEdges(std::span<const double> edges);
Result<std::vector<double>> DecodeEdges(std::string_view blob);

// Whether two histograms have the same bins (uniform with equal lo, hi and count, or equal
// explicit edges; a uniform and an explicit histogram never match).
bool SameBins(const Histogram& a, const Histogram& b);

// The sum of `parts` (at least one): counts added bin by bin when every part has the same bins
// (exact); otherwise every part re-binned onto `bins` uniform bins over the union of their
// ranges (each source bin's count spread over the target bins in proportion to their overlap:
// approximate) and added. `*exact` says which.
Histogram Merge(std::span<const Histogram* const> parts, bool* exact);

}  // namespace cohort::histogram
