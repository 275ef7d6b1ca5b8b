#include "wal/background_appender.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

// Meets the hook of the same chunk: each Append waits (up to 2 s) for on_chunk to have begun on
// the chunk it writes, and each hook for that chunk's write to have begun; each side counts the
// meetings. A hook
// run before or after the write, rather than beside it, would never meet it (each waits for
// the other) and be counted out.
class MeetingFile final : public WritableFile {
 public:
  explicit MeetingFile(WritableFile* base) : base_(base) {}
  Status Append(std::string_view data) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++writing_;
    cv_.notify_all();
    if (cv_.wait_for(lock, std::chrono::seconds(2), [&] { return hooked_ >= writing_; })) {
      ++met_;
    }
    lock.unlock();
    return base_->Append(data);
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    return base_->WriteAt(offset, data);
  }
  Status Sync() override { return base_->Sync(); }
  Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

  // Called by the hook: chunk number `hooked_ + 1` began; waits for its write to begin.
  void HookBegan() {
    std::unique_lock<std::mutex> lock(mu_);
    ++hooked_;
    cv_.notify_all();
    if (cv_.wait_for(lock, std::chrono::seconds(2), [&] { return writing_ >= hooked_; })) {
      ++hook_met_;
    }
  }
  // Chunks whose write met their hook, and whose hook met their write: both are every chunk
  // only when the two overlap.
  std::pair<int, int> met() {
    std::lock_guard<std::mutex> lock(mu_);
    return {met_, hook_met_};
  }

 private:
  WritableFile* const base_;
  std::mutex mu_;
  std::condition_variable cv_;
  int writing_ = 0, hooked_ = 0, met_ = 0, hook_met_ = 0;
};

TEST(BackgroundAppenderTest, EachChunkIsSeenInOrderOnAThreadOfItsOwnWhileItIsWritten) {
  testing::TempDir dir;
  FaultInjectingFileSystem fs(FileSystem::Default());
  const std::string path = dir.path() + "/out";
  auto out = fs.NewWritableFile(path, WriteMode::kTruncate);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  MeetingFile meeting(out->get());
  std::string seen, expected;
  std::vector<std::thread::id> threads;
  {
    BackgroundAppender appender(&meeting,
                                {.queued_chunks = 1, .on_chunk = [&](std::string_view chunk) {
                                   meeting.HookBegan();
                                   seen += chunk;
                                   threads.push_back(std::this_thread::get_id());
                                 }});
    for (int i = 0; i < 5; ++i) {
      std::string chunk(64, char('k' + i));
      expected += chunk;
      ASSERT_TRUE(appender.Push(std::move(chunk)).ok());
    }
    ASSERT_TRUE(appender.Finish().ok());
  }
  EXPECT_EQ(seen, expected);  // every chunk, in order, all before Finish returned
  EXPECT_EQ(meeting.met(), std::make_pair(5, 5));  // each hook ran while its chunk was written
  ASSERT_EQ(threads.size(), 5u);
  for (size_t i = 0; i < threads.size(); ++i) {
    EXPECT_NE(threads[i], std::this_thread::get_id());
    EXPECT_EQ(threads[i], threads[0]);  // one hook thread: a hash sees its chunks in order
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
