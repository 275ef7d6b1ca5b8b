#include "insight/heatmap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

namespace cohort::insight {
namespace {

TEST(HeatmapTest, ChooseTimeColumnsCoversTheSpan) {
  TimeColumns c = ChooseTimeColumns(1000, 1999, 10);
  EXPECT_EQ(c.bucket_ms, 100);
  EXPECT_EQ(c.count, 10);
  EXPECT_EQ(c.Column(1000), 0);
  EXPECT_EQ(c.Column(1999), 9);
  EXPECT_EQ(c.Column(2000), -1);
  EXPECT_EQ(c.Column(999), -1);
  EXPECT_EQ(ChooseTimeColumns(5, 5, 60).count, 1);
}

// Any int64 range (a query's min_time/max_time) gives columns whose every time maps inside them:
// the span overflowed int64 and Column() returned a column past the vector (the server aborted).
TEST(HeatmapTest, ColumnsOfTheWholeInt64RangeStayInside) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  for (auto [tmin, tmax] : {std::pair{lo, hi}, std::pair{-hi, hi}, std::pair{int64_t(0), hi - 1},
                            std::pair{lo, int64_t(0)}, std::pair{hi, hi}}) {
    for (int n : {1, 7, 60}) {
      TimeColumns c = ChooseTimeColumns(tmin, tmax, n);
      ASSERT_GE(c.count, 1);
      ASSERT_LE(c.count, n);
      for (int64_t t : {tmin, tmax, int64_t(1000), tmin / 2 + tmax / 2}) {
        const int col = c.Column(t);
        EXPECT_LT(col, c.count) << tmin << " " << tmax << " " << n << " " << t;
        if (t >= tmin && t <= tmax) {
          EXPECT_GE(col, t == tmax && tmin == lo && tmax == hi && n == 1 ? -1 : 0)
              << tmin << " " << tmax << " " << n << " " << t;
        }
      }
      EXPECT_EQ(c.Start(0), tmin);
      EXPECT_LE(c.Start(c.count - 1), tmax);
      EXPECT_GE(c.Start(c.count - 1), tmin);
      // Every function sized by the columns takes samples at the range's ends.
      EXPECT_EQ(StepTimeColumns(c, {{0, tmin}, {1, tmax}}).size(), size_t(c.count));
      std::vector<series::Bucket> b(1);
      b[0].time_min = tmin, b[0].time_max = tmax, b[0].count = 1, b[0].sum = 2;
      EXPECT_EQ(MeanColumns(c, {b}).size(), size_t(c.count));
    }
  }
}

TEST(HeatmapTest, StepTimeColumnsFromPoints) {
  // 10 ms/step during the first 100 ms, then 40 ms/step.
  std::vector<std::pair<int64_t, int64_t>> pts;
  int64_t t = 0;
  for (int64_t s = 0; s <= 20; ++s) {
    pts.push_back({s, t});
    t += s < 10 ? 10 : 40;
  }
  TimeColumns c = ChooseTimeColumns(0, 499, 5);  // 100 ms columns
  auto cols = StepTimeColumns(c, pts);
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_DOUBLE_EQ(cols[0], 10);
  EXPECT_DOUBLE_EQ(cols[2], 40);
  EXPECT_DOUBLE_EQ(cols[4], 40);
}

TEST(HeatmapTest, BucketCornersFeedStepTimes) {
  std::vector<series::Bucket> b(2);
  b[0].step_min = 0, b[0].step_max = 9, b[0].time_min = 0, b[0].time_max = 90, b[0].count = 10;
  b[1].step_min = 10, b[1].step_max = 19, b[1].time_min = 100, b[1].time_max = 460, b[1].count = 10;
  auto corners = BucketCorners(b);
  ASSERT_EQ(corners.size(), 4u);
  auto cols = StepTimeColumns(ChooseTimeColumns(0, 499, 1), corners);
  EXPECT_DOUBLE_EQ(cols[0], 460.0 / 19);
}

TEST(HeatmapTest, MeanColumnsWeightsByPointsAndSkipsNaN) {
  std::vector<series::Bucket> gpu0(2), gpu1(1);
  gpu0[0].time_min = 0, gpu0[0].time_max = 10, gpu0[0].count = 2, gpu0[0].sum = 180;
  gpu0[1].time_min = 150, gpu0[1].time_max = 150, gpu0[1].count = 1, gpu0[1].nan_count = 1;
  gpu1[0].time_min = 20, gpu1[0].time_max = 20, gpu1[0].count = 1, gpu1[0].sum = 60;
  auto cols = MeanColumns(ChooseTimeColumns(0, 199, 2), {gpu0, gpu1});
  EXPECT_DOUBLE_EQ(cols[0], 80);
  EXPECT_TRUE(std::isnan(cols[1]));
}

}  // namespace
}  // namespace cohort::insight
