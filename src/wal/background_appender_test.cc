#include "wal/background_appender.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "wal/fault_file_system.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

TEST(BackgroundAppenderTest, AppendsInOrderSyncingEverySoManyBytesAndAtTheEnd) {
  testing::TempDir dir;
  FaultInjectingFileSystem fs(FileSystem::Default());
  const std::string path = dir.path() + "/out";
  auto out = fs.NewWritableFile(path, WriteMode::kTruncate);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::string expected;
  {
    BackgroundAppender appender(
        out->get(), {.queued_chunks = 2, .sync_every_bytes = 300, .sync_at_finish = true});
    for (int i = 0; i < 10; ++i) {
      std::string chunk(100, char('a' + i));
      expected += chunk;
      ASSERT_TRUE(appender.Push(std::move(chunk)).ok());
    }
    ASSERT_TRUE(appender.Finish().ok());
  }
  EXPECT_EQ(fs.syncs(), 3 + 1);  // after 300, 600, 900 bytes, then at the end
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_EQ(*ReadFileToString(&fs, path, 1 << 20), expected);
}

TEST(BackgroundAppenderTest, EachChunkIsSeenInOrderOnTheAppendersThreadBeforeItIsWritten) {
  testing::TempDir dir;
  FaultInjectingFileSystem fs(FileSystem::Default());
  const std::string path = dir.path() + "/out";
  auto out = fs.NewWritableFile(path, WriteMode::kTruncate);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::string seen, expected;
  std::vector<std::thread::id> threads;
  std::vector<uint64_t> written_before;  // the file's size when each chunk was seen
  {
    BackgroundAppender appender(out->get(),
                                {.queued_chunks = 1, .on_chunk = [&](std::string_view chunk) {
                                   seen += chunk;
                                   threads.push_back(std::this_thread::get_id());
                                   written_before.push_back((*out)->Size());
                                 }});
    for (int i = 0; i < 5; ++i) {
      std::string chunk(64, char('k' + i));
      expected += chunk;
      ASSERT_TRUE(appender.Push(std::move(chunk)).ok());
    }
    ASSERT_TRUE(appender.Finish().ok());
  }
  EXPECT_EQ(seen, expected);
  ASSERT_EQ(threads.size(), 5u);
  for (size_t i = 0; i < threads.size(); ++i) {
    EXPECT_NE(threads[i], std::this_thread::get_id());
    EXPECT_EQ(written_before[i], 64 * i);  // seen before it was written
  }
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_EQ(*ReadFileToString(&fs, path, 1 << 20), expected);
}

TEST(BackgroundAppenderTest, AWriteErrorIsReturnedByTheNextPushAndByFinish) {
  testing::TempDir dir;
  FaultInjectingFileSystem fs(FileSystem::Default());
  auto out = fs.NewWritableFile(dir.path() + "/out", WriteMode::kTruncate);
  ASSERT_TRUE(out.ok());
  fs.FailWrite(2, ENOSPC);  // the second chunk
  BackgroundAppender appender(out->get(), {.queued_chunks = 1});
  Status pushed;
  for (int i = 0; i < 50 && pushed.ok(); ++i) pushed = appender.Push(std::string(10, 'x'));
  EXPECT_FALSE(pushed.ok());  // a later Push learns of it (nothing more is queued)
  Status finished = appender.Finish();
  EXPECT_FALSE(finished.ok());
  EXPECT_EQ(finished.code(), pushed.code()) << finished.ToString();
  EXPECT_EQ(fs.syncs(), 0);  // no sync asked
}

}  // namespace
}  // namespace cohort::wal
