#include "store/sql/sql_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "store/memory_row_for_test.h"

namespace cohort::store {
namespace {

using MemoryRow = testing_rows::MemoryRow;

TEST(SqlRowsTest, WriterRowReadsNullExitCodeAsNone) {
  using S = std::string;
  MemoryRow row({int64_t{7}, int64_t{3}, S("rank_1"), int64_t{0}, int64_t{1}, S("h"), int64_t{99},
                 S("[0,1]"), S("nonsense"), std::monostate{}, int64_t{1}, int64_t{2},
                 std::monostate{}, int64_t{5}, int64_t{6}});
  WriterRecord w = ReadWriterRow(row);
  EXPECT_EQ(w.label, "rank_1");
  EXPECT_FALSE(w.primary);
  EXPECT_TRUE(w.update_finish_state);
  EXPECT_EQ(w.gpu_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(w.state, RunState::kCrashed);  // an unreadable state reads as crashed
  EXPECT_FALSE(w.exit_code.has_value());
  EXPECT_FALSE(w.finished_ms.has_value());
  EXPECT_EQ(w.last_seq, 6);
}

TEST(SqlRowsTest, StoredRunFileReportsTheDataSizeWithoutTheData) {
  RunFile file;
  file.name = "model.bin";
  file.content_type = "application/octet-stream";
  file.data = std::string(1000, 'x');
  RunFile out = StoredRunFile(file, 1234);
  EXPECT_EQ(out.name, "model.bin");
  EXPECT_EQ(out.content_type, "application/octet-stream");
  EXPECT_EQ(out.size, 1000);
  EXPECT_EQ(out.updated_ms, 1234);
  EXPECT_TRUE(out.data.empty());
}

}  // namespace
}  // namespace cohort::store
