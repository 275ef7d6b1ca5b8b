#include "agent/hash_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "core/sha256.h"
#include "wal/test_util.h"

namespace cohort::agent {
namespace {

using wal::testing::TempDir;

wal::FileSystem* Fs() { return wal::FileSystem::Default(); }

void Write(const std::string& path, std::string_view bytes) {
  ASSERT_TRUE(wal::WriteFileAtomically(Fs(), path, bytes).ok()) << path;
}

// Sets the file's modification time `seconds_ago` seconds back (what a checkpoint written a
// while ago has).
void Age(const std::string& path, int seconds_ago) {
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds_ago;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

// Rewrites the file's bytes in place keeping its size and modification time: a change the
// cache cannot see, which tells whether an answer came from the cache or from the bytes.
void RewriteKeepingIdentity(const std::string& path, std::string_view bytes) {
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), ssize_t(bytes.size()));
  ::close(fd);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(HashCacheTest, AnOldFileIsHashedOnceThenAnsweredWithoutReadingIt) {
  TempDir dir;
  const std::string cache = dir.File("cache"), f = dir.File("ckpt.bin");
  const std::string bytes = wal::testing::Payload(7, (3 << 20) + 17);  // several read blocks
  Write(f, bytes);
  Age(f, 60);
  int64_t seen = 0;
  bool hit = true;
  auto first = HashFileCached(
      Fs(), f, cache, {}, [&](int64_t n) { seen += n; }, &hit);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(hit);
  EXPECT_EQ(first->sha256, Sha256::Hex(bytes));
  EXPECT_EQ(first->size, int64_t(bytes.size()));
  EXPECT_EQ(seen, int64_t(bytes.size()));
  auto st = Fs()->Stat(f);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(LookupHash(Fs(), cache, *st), Sha256::Hex(bytes));

  RewriteKeepingIdentity(f, std::string(bytes.size(), 'z'));
  seen = 0;
  auto second = HashFileCached(
      Fs(), f, cache, {}, [&](int64_t n) { seen += n; }, &hit);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(second->sha256, Sha256::Hex(bytes));  // the entry's, not the new bytes'
  EXPECT_EQ(seen, int64_t(bytes.size()));         // progress as if read

  // A copy is always made from the bytes (and records what it read).
  auto copied = HashFileCached(Fs(), f, cache, dir.File("copy"), nullptr, &hit);
  ASSERT_TRUE(copied.ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(copied->sha256, Sha256::Hex(std::string(bytes.size(), 'z')));
  auto copy = wal::ReadFileToString(Fs(), dir.File("copy"), 8 << 20);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(*copy, std::string(bytes.size(), 'z'));
}

TEST(HashCacheTest, AFileChangedOrJustWrittenIsReadAndAJustWrittenOneIsNotRecorded) {
  TempDir dir;
  const std::string cache = dir.File("cache"), f = dir.File("ckpt.bin");
  Write(f, "version one");
  Age(f, 60);
  ASSERT_TRUE(HashFileCached(Fs(), f, cache).ok());
  // Rewritten now: another modification time (and inode: WriteFileAtomically renames), read.
  Write(f, "version two");
  bool hit = true;
  auto now = HashFileCached(Fs(), f, cache, {}, nullptr, &hit);
  ASSERT_TRUE(now.ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(now->sha256, Sha256::Hex("version two"));
  // Modified less than kRacyNanos before its hashing: a write within the same timestamp tick
  // would not move the time, so the digest is not recorded.
  auto st = Fs()->Stat(f);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(LookupHash(Fs(), cache, *st), std::nullopt);
  auto again = HashFileCached(Fs(), f, cache, {}, nullptr, &hit);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(hit);
}

TEST(HashCacheTest, ADamagedOrForeignEntryIsAMiss) {
  TempDir dir;
  const std::string cache = dir.File("cache");
  wal::FileStat st{.device = 1, .inode = 2, .size = 3, .mtime_ns = 4};
  const std::string sha = Sha256::Hex("abc");
  RecordHash(Fs(), cache, st, sha);
  EXPECT_EQ(LookupHash(Fs(), cache, st), sha);
  const std::string entry = HashCacheDir(cache) + "/" + HashCacheKey(st);
  EXPECT_EQ(HashCacheKey(st), "1-2-3-4");
  std::string text = HashCacheEntry(st, sha);
  ASSERT_EQ(text.size(), 82u);
  text[5] = text[5] == '0' ? '1' : '0';  // one digit of the digest flipped
  Write(entry, text);
  EXPECT_EQ(LookupHash(Fs(), cache, st), std::nullopt);
  // Another file's entry copied under this key: its checksum names the other key.
  wal::FileStat other = st;
  other.inode = 9;
  Write(entry, HashCacheEntry(other, sha));
  EXPECT_EQ(LookupHash(Fs(), cache, st), std::nullopt);
  Write(entry, "short\n");
  EXPECT_EQ(LookupHash(Fs(), cache, st), std::nullopt);
  // No cache directory: hashing still works, nothing is recorded anywhere.
  Write(dir.File("f"), "bytes");
  auto plain = HashFileCached(Fs(), dir.File("f"), "");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->sha256, Sha256::Hex("bytes"));
  // A cache that cannot be written (its directory is a file): a miss, never an error.
  Write(dir.File("blocked"), "not a directory");
  Age(dir.File("f"), 60);
  auto blocked = HashFileCached(Fs(), dir.File("f"), dir.File("blocked"));
  ASSERT_TRUE(blocked.ok()) << blocked.status().ToString();
  EXPECT_EQ(blocked->sha256, Sha256::Hex("bytes"));
}

}  // namespace
}  // namespace cohort::agent
