#include "core/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cohort::histogram {
namespace {

Histogram Uniform(double lo, double hi, std::vector<double> counts) {
  Histogram h;
  h.lo = lo;
  h.hi = hi;
  h.counts = std::move(counts);
  return h;
}

TEST(HistogramInvalidReason, NamesTheProblem) {
  EXPECT_EQ(InvalidReason(Uniform(0, 1, {1, 2})), "");
  EXPECT_NE(InvalidReason(Uniform(0, 1, {})).find("at least one bin"), std::string::npos);
  EXPECT_NE(InvalidReason(Uniform(0, 1, std::vector<double>(513, 0))).find("512"),
            std::string::npos);
  EXPECT_NE(InvalidReason(Uniform(0, 1, {1, std::nan("")})).find("count 1 is nan"),
            std::string::npos);
  EXPECT_NE(InvalidReason(Uniform(0, 1, {-1})).find(">= 0"), std::string::npos);
  EXPECT_NE(InvalidReason(Uniform(1, 1, {1})).find("is empty"), std::string::npos);
  EXPECT_NE(InvalidReason(Uniform(0, std::numeric_limits<double>::infinity(), {1})).find("finite"),
            std::string::npos);
  Histogram e;
  e.edges = {0, 1, 1};
  e.counts = {1, 1};
  EXPECT_NE(InvalidReason(e).find("strictly ascending"), std::string::npos);
  e.edges = {0, 1};
  EXPECT_NE(InvalidReason(e).find("need 3"), std::string::npos);
}

TEST(HistogramCounts, IntegersAsVarintsOthersAsDoublesBothExact) {
  for (const std::vector<double>& counts :
       {std::vector<double>{0, 1, 300, 9007199254740992.0}, std::vector<double>{0.5, 1e300, 0},
        std::vector<double>{1, -0.0}}) {
    std::string blob;
    EncodeCounts(counts, &blob);
    Result<std::vector<double>> back = DecodeCounts(blob, counts.size());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->size(), counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      EXPECT_EQ(std::signbit((*back)[i]), std::signbit(counts[i]));
      EXPECT_EQ((*back)[i], counts[i]);
    }
  }
  std::string small;
  EncodeCounts(std::vector<double>(64, 100), &small);
  EXPECT_EQ(small.size(), 1u + 64u);  // a byte per count
  EXPECT_FALSE(DecodeCounts(small, 65).ok());
  EXPECT_FALSE(DecodeCounts(small, 63).ok());
  EXPECT_FALSE(DecodeCounts("\x07", 0).ok());
}

TEST(HistogramMerge, EqualBinsAddExactlyDifferentBinsReBin) {
  const Histogram a = Uniform(0, 4, {1, 2, 3, 4}), b = Uniform(0, 4, {1, 1, 1, 1});
  const Histogram* same[] = {&a, &b};
  bool exact = false;
  Histogram m = Merge(same, &exact);
  EXPECT_TRUE(exact);
  EXPECT_EQ(m.counts, (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(m.lo, 0);
  EXPECT_EQ(m.hi, 4);

  const Histogram c = Uniform(4, 8, {2, 2, 2, 2});
  const Histogram* differ[] = {&a, &c};
  m = Merge(differ, &exact);
  EXPECT_FALSE(exact);
  EXPECT_EQ(m.lo, 0);
  EXPECT_EQ(m.hi, 8);
  ASSERT_EQ(m.counts.size(), 4u);
  EXPECT_EQ(m.counts, (std::vector<double>{3, 7, 4, 4}));  // bins of width 2
  double total = 0;
  for (double x : m.counts) total += x;
  EXPECT_EQ(total, 18);

  Histogram e;
  e.edges = {0, 1, 4};
  e.counts = {1, 3};
  const Histogram* mixed[] = {&e, &a};
  m = Merge(mixed, &exact);
  EXPECT_FALSE(exact);
  EXPECT_NEAR(m.counts[0] + m.counts[1] + m.counts[2] + m.counts[3], 14, 1e-9);
}

TEST(HistogramMerge, SpansWiderThanTheLargestDoubleAndHugeCountsStayFinite) {
  // Valid histograms (finite edges and counts) whose merged span, hi - lo, overflows: every
  // position was NaN and the counts were lost (0 0 0 0); sums of huge counts overflowed to inf,
  // which the histogram route cannot write as JSON.
  const Histogram a = Uniform(-1e308, 1e308, {1, 2, 3, 4}), b = Uniform(-1e308, 1.5e308, {1, 2});
  EXPECT_EQ(a.edge(2), 0.0);
  EXPECT_TRUE(std::isfinite(a.edge(1)) && a.edge(1) < 0 && a.edge(3) > 0);
  const Histogram* parts[] = {&a, &b};
  bool exact = true;
  Histogram m = Merge(parts, &exact);
  EXPECT_FALSE(exact);
  ASSERT_EQ(m.counts.size(), 4u);
  double total = 0;
  for (double x : m.counts) {
    EXPECT_TRUE(std::isfinite(x));
    total += x;
  }
  EXPECT_NEAR(total, 13, 1e-9);
  const double big = std::numeric_limits<double>::max() / 1.5;
  const Histogram c = Uniform(0, 1, {big, 1}), d = Uniform(0, 1, {big, 2});
  const Histogram* huge[] = {&c, &d};
  m = Merge(huge, &exact);
  EXPECT_TRUE(exact);
  EXPECT_EQ(m.counts[0], std::numeric_limits<double>::max());
  EXPECT_EQ(m.counts[1], 3);
}

}  // namespace
}  // namespace cohort::histogram
