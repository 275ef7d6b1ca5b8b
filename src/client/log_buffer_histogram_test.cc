// LogBuffer with histograms (cohort.h Run::Log(values, histograms)): the call's step, the batch's
// key table, one type per key, invalid histograms refused whole.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "client/log_buffer.h"

namespace cohort::client {
namespace {

Histogram H(std::vector<double> counts) {
  Histogram h;
  h.lo = 0;
  h.hi = 1;
  h.counts = std::move(counts);
  return h;
}

TEST(LogBufferHistogramTest, HistogramsTakeTheStepOfTheirCallAndTheirKeysJoinTheTable) {
  LogBuffer buf;
  bool flush = false;
  const Histograms first = {{"grad", H({1, 2})}};
  ASSERT_TRUE(buf.Log({{"loss", 0.5}}, first, std::nullopt, true, &flush).ok());
  const Histograms only = {{"grad", H({3})}, {"act", H({4})}};
  ASSERT_TRUE(buf.Log({}, only, std::nullopt, true, &flush).ok());  // a call of histograms only
  ASSERT_TRUE(buf.Log({{"loss", 0.4}}, {}, 7, true, &flush).ok());
  EXPECT_EQ(buf.step(), 8);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  ASSERT_EQ(b.histograms.size(), 3u);
  EXPECT_EQ(b.histograms[0].step, 0);
  EXPECT_EQ(b.keys[b.histograms[0].key], "grad");
  EXPECT_EQ(b.histograms[0].value.counts, (std::vector<double>{1, 2}));
  EXPECT_EQ(b.histograms[1].step, 1);
  EXPECT_EQ(b.keys[b.histograms[1].key], "grad");
  EXPECT_EQ(b.histograms[2].step, 1);
  EXPECT_EQ(b.keys[b.histograms[2].key], "act");
  ASSERT_EQ(b.history.size(), 2u);  // the call of histograms only has no scalar row
  EXPECT_EQ(b.history[0].step, 0);
  EXPECT_EQ(b.history[1].step, 7);
  std::string encoded;
  batch::EncodeStats stats = batch::Encode(b, &encoded);
  EXPECT_EQ(stats.histograms, 3);
  EXPECT_EQ(stats.dropped_histograms, 0);
  EXPECT_FALSE(buf.Take(&b));
}

TEST(LogBufferHistogramTest, AKeyHasOneTypeAndABadCallLogsNothing) {
  LogBuffer buf;
  bool flush = false;
  ASSERT_TRUE(buf.Log({{"loss", 1}}, {}, std::nullopt, true, &flush).ok());
  const Histograms as_hist = {{"loss", H({1})}};
  Status s = buf.Log({{"acc", 1}}, as_hist, std::nullopt, true, &flush);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'loss' was logged as a scalar"), std::string::npos) << s.message();
  const Histograms grad = {{"grad", H({1})}};
  ASSERT_TRUE(buf.Log({}, grad, std::nullopt, true, &flush).ok());
  s = buf.Log({{"grad", 2}}, {}, std::nullopt, true, &flush);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'grad' was logged as a histogram"), std::string::npos);
  // The plain scalar Log() drops such a value and counts it.
  buf.Log({{"grad", 2}}, std::nullopt, true);
  EXPECT_EQ(buf.dropped(), 1);
  const Histograms bad = {{"ok", H({1})}, {"nan", H({std::nan("")})}};
  s = buf.Log({{"x", 1}}, bad, std::nullopt, true, &flush);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("histogram 'nan': count 0 is nan"), std::string::npos)
      << s.message();
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_EQ(b.histograms.size(), 1u);  // grad only: the refused calls logged nothing
  for (const auto& k : b.keys) EXPECT_NE(k, "x");
}

// A batch's distinct keys stay within max_frame_keys, histogram and media keys included, and a
// step of more keys than that is cut across batches at the same step. The frame was taken
// whole (its first row, and every histogram the word budget allowed): the server refused the
// batch of more than 10,000 keys after the agent had acknowledged it, and dropped it.
TEST(LogBufferHistogramTest, ABatchNeverHasMoreKeysThanAFrameMay) {
  LogBuffer::Limits limits;
  limits.max_frame_keys = 100;
  limits.flush_keys = 1000;
  LogBuffer buf(limits);
  bool flush = false;
  Values wide;
  for (int i = 0; i < 150; ++i) wide.emplace_back("k" + std::to_string(i), double(i));
  ASSERT_TRUE(buf.Log(wide, {}, std::nullopt, true, &flush).ok());  // one step of 150 keys
  Values some;
  for (int i = 0; i < 90; ++i) some.emplace_back("s" + std::to_string(i), 1.0);
  Histograms hists;
  for (int i = 0; i < 20; ++i) hists.emplace_back("h" + std::to_string(i), H({1}));
  ASSERT_TRUE(buf.Log(some, hists, std::nullopt, true, &flush).ok());
  std::map<std::string, std::set<int64_t>> steps;  // key -> steps seen
  int64_t cells = 0, histograms = 0;
  batch::Batch b;
  int batches = 0;
  while (buf.Take(&b)) {
    ++batches;
    EXPECT_LE(b.keys.size(), 100u) << "batch " << batches;
    for (const auto& row : b.history) {
      for (uint32_t c = row.begin; c < row.begin + row.count; ++c) {
        steps[b.keys[b.cells[c].key]].insert(row.step);
        ++cells;
      }
    }
    for (const auto& h : b.histograms) {
      steps[b.keys[h.key]].insert(h.step);
      ++histograms;
    }
    ASSERT_LT(batches, 20);
  }
  EXPECT_GE(batches, 3);
  EXPECT_EQ(cells, 240);
  EXPECT_EQ(histograms, 20);
  EXPECT_EQ(steps["k0"], (std::set<int64_t>{0}));
  EXPECT_EQ(steps["k149"], (std::set<int64_t>{0}));  // the wide step's last key, same step
  EXPECT_EQ(steps["s89"], (std::set<int64_t>{1}));
  EXPECT_EQ(steps["h19"], (std::set<int64_t>{1}));
}

// A row whose key is logged several times (commit=false calls) counts its distinct keys: it fits
// the frame and is taken whole (it took the cut path, which left an empty row behind).
TEST(LogBufferHistogramTest, ARowOfOneKeyLoggedTwiceIsTakenWholeAndLeavesNoEmptyRow) {
  LogBuffer::Limits limits;
  limits.max_frame_keys = 3;
  LogBuffer buf(limits);
  for (int i = 0; i < 4; ++i) buf.Log({{"a", double(i)}}, std::nullopt, i == 3);
  buf.Log({{"b", 1}, {"c", 2}, {"d", 3}}, std::nullopt, true);
  std::vector<std::vector<uint32_t>> taken;  // cells per row, per batch
  batch::Batch b;
  while (buf.Take(&b)) {
    ASSERT_LE(b.keys.size(), 3u);
    for (const auto& row : b.history) taken.push_back({row.count});
    ASSERT_LT(taken.size(), 10u);
  }
  EXPECT_EQ(taken, (std::vector<std::vector<uint32_t>>{{4}, {3}}));
}

TEST(LogBufferHistogramTest, AHistogramComputedLaterIsLoggedAtTheStepOfItsCall) {
  // The Python SDK claims the key at the log call, computes the histogram off the training thread
  // and logs it at that call's step while the writer is steps ahead (Run::LogHistogram).
  LogBuffer buf;
  bool flush = false;
  ASSERT_TRUE(buf.ClaimHistogram("grad").ok());
  ASSERT_TRUE(buf.Log({{"loss", 0.5}}, {}, std::nullopt, true, &flush).ok());  // step 0
  ASSERT_TRUE(buf.Log({{"loss", 0.4}}, {}, std::nullopt, true, &flush).ok());  // step 1
  ASSERT_TRUE(buf.LogHistogramAt("grad", 0, H({1, 2}), &flush).ok());
  EXPECT_EQ(buf.step(), 2);  // the writer's step does not move
  // The claimed key is a histogram's: a scalar under it is refused, as after Log(histograms).
  Status s = buf.Log({{"grad", 1}}, {}, std::nullopt, true, &flush);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'grad' was logged as a histogram"), std::string::npos) << s.message();
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  ASSERT_EQ(b.histograms.size(), 1u);
  EXPECT_EQ(b.histograms[0].step, 0);
  EXPECT_EQ(b.keys[b.histograms[0].key], "grad");
  EXPECT_EQ(b.histograms[0].value.counts, (std::vector<double>{1, 2}));
  ASSERT_EQ(b.history.size(), 2u);
}

TEST(LogBufferHistogramTest, AHistogramLoggedLaterIsCheckedLikeOneOfACall) {
  LogBuffer buf;
  bool flush = false;
  ASSERT_TRUE(buf.Log({{"loss", 1}}, {}, std::nullopt, true, &flush).ok());
  Status s = buf.ClaimHistogram("loss");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'loss' was logged as a scalar and cannot be logged as a histogram"),
            std::string::npos)
      << s.message();
  s = buf.LogHistogramAt("loss", 0, H({1}), &flush);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = buf.LogHistogramAt("grad", -1, H({1}), &flush);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("step < 0"), std::string::npos) << s.message();
  s = buf.LogHistogramAt("grad", 0, H({1, std::nan("")}), &flush);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("histogram 'grad'"), std::string::npos) << s.message();
  s = buf.LogHistogramAt("system/cpu", 0, H({1}), &flush);  // the agent's keys
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_TRUE(b.histograms.empty());  // nothing of the refused calls
}

}  // namespace
}  // namespace cohort::client
