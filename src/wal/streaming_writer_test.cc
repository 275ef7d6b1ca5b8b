#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include "wal/file.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  uint32_t x = uint32_t(seed) * 2654435761u + 7;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = char(x >> 24);
  }
  return s;
}

// Writes `bytes` from `offset` in chunks of `chunk` through `fs`'s streaming writer, syncs,
// closes; the file's contents afterwards.
std::string WriteThrough(FileSystem* fs, const std::string& path, uint64_t offset,
                         const std::string& bytes, size_t chunk) {
  auto out = fs->NewStreamingWriter(path, offset);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    EXPECT_TRUE((*out)->Append(std::string_view(bytes).substr(at, chunk)).ok());
  }
  EXPECT_EQ((*out)->Size(), offset + bytes.size());
  EXPECT_TRUE((*out)->Sync().ok());
  EXPECT_TRUE((*out)->Close().ok());
  auto read = ReadFileToString(fs, path, 64 << 20);
  EXPECT_TRUE(read.ok()) << read.status().ToString();
  return read.ok() ? *read : std::string();
}

// On this machine's file system (direct writes where it allows) and on the base version (the
// same contract through NewWritableFile: here a NoSyncFileSystem's files).
TEST(StreamingWriterTest, WritesInOrderFromItsOffsetKeepingWhatIsBeforeIt) {
  testing::TempDir dir;
  for (FileSystem* fs : {FileSystem::Default(), static_cast<FileSystem*>(nullptr)}) {
    testing::NoSyncFileSystem no_sync;
    if (fs == nullptr) fs = &no_sync;
    const std::string path = dir.path() + (fs == &no_sync ? "/base" : "/posix");
    // Odd sizes and chunks: whole megabytes go past the page cache, the tail through it.
    const std::string first = Pattern((3 << 20) + 123, 1);
    EXPECT_EQ(WriteThrough(fs, path, 0, first, 100'003), first);
    // A later part at an aligned offset leaves the first's bytes alone (never truncated).
    const std::string second = Pattern((1 << 20) + 5, 2);
    const uint64_t at = 4 << 20;
    std::string expected = first;
    expected.resize(at, '\0');
    expected += second;
    EXPECT_EQ(WriteThrough(fs, path, at, second, 1 << 18), expected);
    // An unaligned offset (a download resumed mid-block) goes through the page cache.
    const std::string third = Pattern(10'000, 3);
    expected.resize(expected.size() - 17);
    expected.replace(expected.size() - 1000, 1000, third.substr(0, 1000));
    expected += third.substr(1000);
    EXPECT_EQ(WriteThrough(fs, path, expected.size() - third.size(), third, 777), expected);
  }
}

TEST(StreamingWriterTest, WritesOnlyAtItsEnd) {
  testing::TempDir dir;
  auto out = FileSystem::Default()->NewStreamingWriter(dir.path() + "/f", 8192);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE((*out)->Append("abc").ok());
  EXPECT_TRUE((*out)->WriteAt(8195, "def").ok());
  EXPECT_EQ((*out)->WriteAt(0, "x").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_EQ(*FileSystem::Default()->FileSize(dir.path() + "/f"), 8198u);
  EXPECT_FALSE((*out)->Append("late").ok());  // closed
}

TEST(StreamingWriterTest, WorksWhereTheFileSystemRefusesDirectWrites) {
  // tmpfs refuses O_DIRECT: every byte goes through the page cache.
  Result<bool> shm = FileSystem::Default()->Exists("/dev/shm");
  if (!shm.ok() || !*shm) GTEST_SKIP() << "no /dev/shm on this machine";
  const std::string path = "/dev/shm/cohort-streaming-writer-test-" + std::to_string(::getpid());
  const std::string bytes = Pattern((2 << 20) + 99, 4);
  EXPECT_EQ(WriteThrough(FileSystem::Default(), path, 0, bytes, 65'536), bytes);
  (void)FileSystem::Default()->Remove(path);
}

}  // namespace
}  // namespace cohort::wal
