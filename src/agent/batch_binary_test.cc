#include "agent/batch_binary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cohort::agent {
namespace {

LogBatch::Row AddRow(LogBatch* b, std::vector<LogBatch::Row>* rows, int64_t step, int64_t time,
                     std::vector<std::pair<uint32_t, double>> cells) {
  LogBatch::Row r;
  r.step = step;
  r.time_ms = time;
  r.begin = uint32_t(b->cells.size());
  r.count = uint32_t(cells.size());
  for (auto [k, v] : cells) b->cells.push_back({k, v});
  rows->push_back(r);
  return r;
}

LogBatch Typical() {
  LogBatch b;
  b.keys = {"loss", "acc", "lr", "gpu.0.temp"};
  for (int i = 0; i < 50; ++i) {
    AddRow(&b, &b.history, i, 1700000000000 + i * 3, {{0, 1.0 / (i + 1)}, {1, i * 0.5}});
  }
  AddRow(&b, &b.history, 60, 1699999999000, {{2, -0.0}, {0, std::nan("")}});
  AddRow(&b, &b.history, -1, 1700000000500, {{1, std::numeric_limits<double>::infinity()}});
  AddRow(&b, &b.history, 61, 1700000000501, {});
  AddRow(&b, &b.system, 0, 1700000000002, {{3, 61}});
  AddRow(&b, &b.system, 0, 1700000000001, {{3, 62}});
  b.console.push_back({1700000000003, false, "epoch 1 caf\xC3\xA9"});
  b.console.push_back({1700000000001, true, ""});
  return b;
}

std::string General(const LogBatch& b, int64_t seq) {
  std::string out;
  AppendBatchBinary(b, seq, &out);
  return out;
}

TEST(TranscodeLogBatchBinary, EqualsTheGeneralPathByteForByte) {
  for (const LogBatch& b : {Typical(), LogBatch{}}) {
    std::string record;
    EncodeLogBatch(b, &record);
    std::string out = "prefix";
    BatchJsonStats stats;
    ASSERT_TRUE(TranscodeLogBatchBinary(record, 42, &out, &stats));
    EXPECT_EQ(out, "prefix" + General(b, 42));
    EXPECT_EQ(stats.points, int64_t(b.points()));
  }
}

TEST(TranscodeLogBatchBinary, DeclinesWhatNeedsTheGeneralPath) {
  std::vector<LogBatch> cases;
  LogBatch b = Typical();
  b.keys[1] = "bad\xFF";  // invalid UTF-8: repaired by the general path
  cases.push_back(b);
  b = Typical();
  b.keys[2] = "";  // an empty key: dropped there
  cases.push_back(b);
  b = Typical();
  b.keys[2] = std::string(257, 'k');
  cases.push_back(b);
  b = Typical();
  b.keys[3] = "loss";  // two equal keys: merged there
  cases.push_back(b);
  b = Typical();
  AddRow(&b, &b.history, 70, 1, {{0, 1}, {0, 2}});  // a key twice in a row: the last wins there
  cases.push_back(b);
  b = Typical();
  b.console.push_back({1, false, std::string(kMaxConsoleLineBytes + 1, 'x')});  // cut there
  cases.push_back(b);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string record;
    EncodeLogBatch(cases[i], &record);
    std::string out = "keep";
    BatchJsonStats stats;
    EXPECT_FALSE(TranscodeLogBatchBinary(record, 1, &out, &stats)) << "case " << i;
    EXPECT_EQ(out, "keep") << "case " << i;
  }
}

TEST(TranscodeLogBatchBinary, DeclinesEveryTruncatedOrExtendedRecord) {
  std::string record;
  EncodeLogBatch(Typical(), &record);
  for (size_t n = 0; n < record.size(); ++n) {
    std::string out;
    BatchJsonStats stats;
    EXPECT_FALSE(TranscodeLogBatchBinary(record.substr(0, n), 1, &out, &stats)) << n;
    EXPECT_TRUE(out.empty());
    // The general path refuses the same records.
    EXPECT_FALSE(DecodeLogBatch(record.substr(0, n)).ok()) << n;
  }
  std::string out;
  BatchJsonStats stats;
  EXPECT_FALSE(TranscodeLogBatchBinary(record + "x", 1, &out, &stats));
}

}  // namespace
}  // namespace cohort::agent
