#include "client/log_buffer.h"

#include <gtest/gtest.h>

#include <map>

namespace cohort::client {
namespace {

// step -> key -> value, from a taken batch.
std::map<int64_t, std::map<std::string, double>> Rows(const batch::Batch& b) {
  std::map<int64_t, std::map<std::string, double>> out;
  for (const auto& r : b.history) {
    for (uint32_t i = r.begin; i < r.begin + r.count; ++i) {
      out[r.step][b.keys[b.cells[i].key]] = b.cells[i].value;
    }
  }
  return out;
}

TEST(LogBufferTest, CommitAdvancesTheStep) {
  LogBuffer buf;
  buf.Log({{"loss", 1}}, std::nullopt, true);
  buf.Log({{"loss", 2}}, std::nullopt, true);
  EXPECT_EQ(buf.step(), 2);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  auto rows = Rows(b);
  EXPECT_EQ(rows[0]["loss"], 1);
  EXPECT_EQ(rows[1]["loss"], 2);
}

TEST(LogBufferTest, NoCommitAccumulatesIntoOneRow) {
  LogBuffer buf;
  buf.Log({{"loss", 1}}, std::nullopt, false);
  buf.Log({{"acc", 0.5}}, std::nullopt, false);
  buf.Log({{"lr", 0.1}}, std::nullopt, true);
  EXPECT_EQ(buf.step(), 1);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  ASSERT_EQ(b.history.size(), 1u);
  EXPECT_EQ(b.history[0].count, 3u);
  EXPECT_EQ(b.history[0].step, 0);
}

TEST(LogBufferTest, ExplicitHigherStepJumpsAndLowerStepIsDropped) {
  LogBuffer buf;
  buf.Log({{"a", 1}}, 10, true);
  EXPECT_EQ(buf.step(), 11);
  buf.Log({{"a", 2}, {"b", 3}}, 5, true);  // behind the current step: ignored
  EXPECT_EQ(buf.dropped(), 2);
  EXPECT_EQ(buf.step(), 11);
  buf.Log({{"a", 4}}, 11, false);
  buf.Log({{"b", 5}}, 11, true);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  auto rows = Rows(b);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[10]["a"], 1);
  EXPECT_EQ(rows[11]["a"], 4);
  EXPECT_EQ(rows[11]["b"], 5);
}

TEST(LogBufferTest, NegativeStepIsDropped) {
  LogBuffer buf;
  buf.Log({{"a", 1}}, -1, true);
  EXPECT_EQ(buf.dropped(), 1);
  EXPECT_TRUE(buf.empty());
}

TEST(LogBufferTest, InvalidKeysAreDroppedOthersKept) {
  LogBuffer buf;
  buf.Log({{"", 1}, {std::string(300, 'k'), 2}, {"ok", 3}}, std::nullopt, true);
  EXPECT_EQ(buf.dropped(), 2);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_EQ(b.keys, (std::vector<std::string>{"ok"}));
}

TEST(LogBufferTest, ChangingKeyOrderStillMapsCorrectly) {
  LogBuffer buf;
  buf.Log({{"a", 1}, {"b", 2}}, std::nullopt, true);
  buf.Log({{"b", 3}, {"a", 4}}, std::nullopt, true);
  buf.Log({{"c", 5}}, std::nullopt, true);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  auto rows = Rows(b);
  EXPECT_EQ(rows[1]["a"], 4);
  EXPECT_EQ(rows[1]["b"], 3);
  EXPECT_EQ(rows[2]["c"], 5);
}

TEST(LogBufferTest, TakenBatchHasOnlyItsOwnKeys) {
  LogBuffer buf;
  buf.Log({{"a", 1}}, std::nullopt, true);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  buf.Log({{"b", 2}}, std::nullopt, true);
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_EQ(b.keys, (std::vector<std::string>{"b"}));
  EXPECT_EQ(b.cells[0].key, 0u);
  EXPECT_FALSE(buf.Take(&b));
}

TEST(LogBufferTest, LargeBacklogIsTakenInBoundedFrames) {
  LogBuffer::Limits limits;
  limits.max_frame_cells = 100;
  LogBuffer buf(limits);
  for (int i = 0; i < 250; ++i) buf.Log({{"x", double(i)}}, std::nullopt, true);
  int64_t total = 0, frames = 0, last_step = -1;
  batch::Batch b;
  while (buf.Take(&b)) {
    ++frames;
    EXPECT_LE(b.cells.size(), 100u);
    for (const auto& r : b.history) {
      EXPECT_EQ(r.step, last_step + 1);
      EXPECT_EQ(b.cells[r.begin].value, double(r.step));
      last_step = r.step;
    }
    total += int64_t(b.cells.size());
  }
  EXPECT_EQ(total, 250);
  EXPECT_EQ(frames, 3);
}

TEST(LogBufferTest, AsksForFlushAtThreshold) {
  LogBuffer::Limits limits;
  limits.flush_cells = 3;
  LogBuffer buf(limits);
  EXPECT_FALSE(buf.Log({{"a", 1}, {"b", 1}}, std::nullopt, true));
  EXPECT_TRUE(buf.Log({{"a", 1}}, std::nullopt, true));
}

TEST(LogBufferTest, ConsoleLinesAreTakenWithTheBatch) {
  LogBuffer buf;
  buf.AddConsole(5, true, "oops");
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  ASSERT_EQ(b.console.size(), 1u);
  EXPECT_TRUE(b.console[0].is_stderr);
  EXPECT_EQ(b.console[0].text, "oops");
}

TEST(LogBufferTest, AdvanceStepToOnlyRaises) {
  LogBuffer buf;
  buf.AdvanceStepTo(7);
  buf.AdvanceStepTo(3);
  EXPECT_EQ(buf.step(), 7);
}

TEST(LogBufferTest, InternedPointsShareTheKeyTableWithStringLogs) {
  LogBuffer buf;
  const uint32_t loss = buf.Intern("loss");
  EXPECT_EQ(buf.Intern("loss"), loss);
  EXPECT_EQ(buf.Intern(""), LogBuffer::kInvalidKey);
  EXPECT_EQ(buf.Intern(std::string(257, 'k')), LogBuffer::kInvalidKey);
  const Point points[] = {{KeyId{loss}, 1.5}, {KeyId{}, 2}, {KeyId{999}, 3}};
  buf.Log(points, std::nullopt, true);
  buf.Log({{"loss", 2.5}, {"acc", 0.5}}, std::nullopt, true);
  const Point later[] = {{KeyId{buf.Intern("acc")}, 0.75}};
  buf.Log(later, 7, true);
  EXPECT_EQ(buf.dropped(), 2);  // the invalid and the unknown id
  EXPECT_EQ(buf.step(), 8);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_EQ(b.keys.size(), 2u);
  auto rows = Rows(b);
  EXPECT_EQ(rows[0], (std::map<std::string, double>{{"loss", 1.5}}));
  EXPECT_EQ(rows[1], (std::map<std::string, double>{{"loss", 2.5}, {"acc", 0.5}}));
  EXPECT_EQ(rows[7], (std::map<std::string, double>{{"acc", 0.75}}));
}

// The key rule (core/metric_key.h) is applied at the call: a key the server would refuse never
// reaches a batch, so it can never make the server refuse the batch (and its other keys) after
// the agent acknowledged it.
TEST(LogBufferTest, KeysTheServerWouldRefuseAreDroppedAtTheCallAndTheRestKept) {
  LogBuffer buf;
  buf.Log({{"loss", 1}, {"system/gpu.0.temp", 2}, {std::string("a\0b", 3), 3}, {"bad\xff", 4},
           {"acc", 5}},
          std::nullopt, true);
  EXPECT_EQ(buf.Intern("system/cpu"), LogBuffer::kInvalidKey);
  EXPECT_EQ(buf.dropped(), 3);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_EQ(Rows(b)[0], (std::map<std::string, double>{{"loss", 1}, {"acc", 5}}));
}

TEST(LogBufferTest, ConsoleTextIsTakenInBoundedBatches) {
  LogBuffer::Limits limits;
  limits.max_frame_console_bytes = 10;
  LogBuffer buf(limits);
  for (int i = 0; i < 5; ++i) buf.AddConsole(i, false, "1234");
  std::vector<size_t> sizes;
  batch::Batch b;
  while (buf.Take(&b)) sizes.push_back(b.console.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));
  EXPECT_TRUE(buf.empty());
}

TEST(LogBufferTest, InternedPointsBehindTheStepAreDropped) {
  LogBuffer buf;
  const Point p[] = {{KeyId{buf.Intern("x")}, 1}, {KeyId{buf.Intern("y")}, 2}};
  buf.Log(p, 5, true);
  buf.Log(p, 2, true);
  EXPECT_EQ(buf.dropped(), 2);
  EXPECT_EQ(buf.step(), 6);
}

// A call dropped because the buffer is full (the flusher stuck) still ends its step: the next
// call's values took the dropped call's step before (one step early for every drop).
TEST(LogBufferTest, ACallDroppedOnAFullBufferStillMovesTheStepOn) {
  LogBuffer::Limits limits;
  limits.max_pending_cells = 2;
  LogBuffer buf(limits);
  buf.Log({{"a", 1}, {"b", 2}}, std::nullopt, true);  // full now
  buf.Log({{"a", 3}}, std::nullopt, true);            // dropped, committed
  EXPECT_EQ(buf.step(), 2);
  EXPECT_EQ(buf.dropped(), 1);
  const Point p[] = {{KeyId{buf.Intern("a")}, 4}};
  buf.Log(p, std::nullopt, true);  // the interned form too
  EXPECT_EQ(buf.step(), 3);
  EXPECT_EQ(buf.dropped(), 2);
  buf.Log({{"a", 5}}, std::nullopt, false);  // dropped, not committed: the step stays
  EXPECT_EQ(buf.step(), 3);
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  auto rows = Rows(b);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::map<std::string, double>{{"a", 1}, {"b", 2}}));
}

}  // namespace
}  // namespace cohort::client
