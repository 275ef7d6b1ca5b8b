// Fault injection: full disks, failing syncs, short writes and power loss, through
// FaultInjectingFileSystem.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "wal/ack_file.h"
#include "wal/fault_file_system.h"
#include "wal/log.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

using testing::Drain;
using testing::Payload;
using testing::ReadRaw;
using testing::SamePayloads;
using testing::SegmentsIn;
using testing::TempDir;

std::vector<std::string> Unacknowledged(Log* log) {
  std::vector<std::string> out;
  for (Record& r : Drain(log->ReadUnacknowledged().get())) out.push_back(std::move(r.payload));
  return out;
}

std::vector<std::string> Expected(int from, int to, size_t size) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(Payload(i, size));
  return out;
}

class FaultTest : public ::testing::Test {
 protected:
  std::unique_ptr<Log> Open(uint64_t segment_size = kDefaultSegmentSize) {
    Result<std::unique_ptr<Log>> log =
        Log::Open(dir_.path(), {.fs = &fs_, .segment_size = segment_size});
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(log).value() : nullptr;
  }
  // Reopens through the plain POSIX file system, as the next process would.
  std::unique_ptr<Log> Reopen(uint64_t segment_size = kDefaultSegmentSize) {
    Result<std::unique_ptr<Log>> log = Log::Open(dir_.path(), {.segment_size = segment_size});
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(log).value() : nullptr;
  }
  std::string SegmentPath(uint64_t n) const { return dir_.File(SegmentFileName(n)); }

  TempDir dir_;
  FaultInjectingFileSystem fs_{FileSystem::Default()};
};

TEST_F(FaultTest, FaultFileSystemShortWriteKeepsOnlyThePrefix) {
  std::string path = dir_.File("f");
  auto file = std::move(fs_.NewWritableFile(path, WriteMode::kTruncate).value());
  fs_.FailWrite(2, ENOSPC, /*written_first=*/3);
  ASSERT_TRUE(file->Append("abc").ok());
  Status s = file->Append("defgh");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
  EXPECT_EQ(file->Size(), 6u);
  EXPECT_TRUE(file->Append("ij").ok());  // not sticky
  EXPECT_EQ(ReadRaw(path), "abcdefij");
}

TEST_F(FaultTest, FaultFileSystemCrashDropsUnsyncedBytesAndUnsyncedFiles) {
  std::string kept = dir_.File("kept");
  std::string fresh = dir_.File("fresh");
  auto a = std::move(fs_.NewWritableFile(kept, WriteMode::kTruncate).value());
  ASSERT_TRUE(a->Append("durable").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(a->Append("-volatile").ok());
  auto b = std::move(fs_.NewWritableFile(fresh, WriteMode::kTruncate).value());
  ASSERT_TRUE(b->Append("synced data, unsynced directory entry").ok());
  ASSERT_TRUE(b->Sync().ok());

  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(ReadRaw(kept), "durable");
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_EQ(a->Append("x").code(), StatusCode::kIOError);  // a dead process's descriptor
}

TEST_F(FaultTest, FaultFileSystemCrashDropsDirectoriesWhoseParentWasNotSynced) {
  // A directory made and never synced in its parent goes with everything in it, synced files
  // included (renamed into it, even); one whose parent was synced stays.
  const std::string lost = dir_.File("lost"), kept = dir_.File("kept");
  ASSERT_TRUE(fs_.CreateDir(lost + "/deep").ok());
  ASSERT_TRUE(fs_.CreateDir(kept).ok());
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());  // kept's entry (and lost's: made before)
  ASSERT_TRUE(fs_.CreateDir(kept + "/new").ok());
  for (const std::string& d : {lost + "/deep", kept, kept + "/new"}) {
    auto f = std::move(fs_.NewWritableFile(d + "/f.tmp", WriteMode::kTruncate).value());
    ASSERT_TRUE(f->Append("data").ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Close().ok());
    ASSERT_TRUE(fs_.Rename(d + "/f.tmp", d + "/f").ok());
  }
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_TRUE(std::filesystem::exists(lost));  // its parent was synced after it was made
  EXPECT_FALSE(std::filesystem::exists(lost + "/deep"));
  EXPECT_EQ(ReadRaw(kept + "/f"), "data");
  EXPECT_FALSE(std::filesystem::exists(kept + "/new"));
}

TEST_F(FaultTest, FaultFileSystemStickyWriteFaultFailsUntilCleared) {
  auto f = std::move(fs_.NewWritableFile(dir_.File("f"), WriteMode::kTruncate).value());
  fs_.FailWrite(1, ENOSPC, 0, /*sticky=*/true);
  EXPECT_FALSE(f->Append("a").ok());
  EXPECT_FALSE(f->Append("b").ok());
  fs_.ClearFaults();
  EXPECT_TRUE(f->Append("c").ok());
  EXPECT_EQ(ReadRaw(dir_.File("f")), "c");
}

TEST_F(FaultTest, EnospcOnAppendIsUnavailableAndLeavesNothingHalfWritten) {
  auto log = Open();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(log->Append(Payload(i, 200)).ok());
  ASSERT_TRUE(log->Sync().ok());
  const uint64_t size_before = ReadRaw(SegmentPath(1)).size();

  fs_.FailWrite(1, ENOSPC, /*written_first=*/100);  // half a record reaches the file
  Result<Position> failed = log->Append(Payload(99, 200));
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("No space left on device"), std::string::npos);
  EXPECT_EQ(ReadRaw(SegmentPath(1)).size(), size_before);  // cut back at once

  // The disk has room again: the log carries on.
  ASSERT_TRUE(log->Append(Payload(10, 200)).ok());
  ASSERT_TRUE(log->Sync().ok());
  log.reset();
  auto reopened = Reopen();
  EXPECT_TRUE(reopened->recovery().clean()) << reopened->recovery().ToString();
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(0, 11, 200)));
}

TEST_F(FaultTest, DiskFullForManyAppendsRecoversWhenSpaceReturns) {
  auto log = Open(4096);
  ASSERT_TRUE(log->Append(Payload(0, 300)).ok());
  fs_.FailWrite(1, ENOSPC, 0, /*sticky=*/true);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(log->Append(Payload(1, 300)).status().code(), StatusCode::kUnavailable);
  }
  fs_.ClearFaults();
  for (int i = 1; i < 30; ++i) ASSERT_TRUE(log->Append(Payload(i, 300)).ok());  // rolls too
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), Expected(0, 30, 300)));
}

TEST_F(FaultTest, ShortWriteThatCannotBeCutBackBreaksTheLogAndRecoveryDropsIt) {
  auto log = Open();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(log->Append(Payload(i, 500)).ok());
  Position durable = log->end();
  ASSERT_TRUE(log->Sync().ok());
  fs_.FailWrite(1, EIO, /*written_first=*/250);
  fs_.FailTruncates(EIO);
  EXPECT_EQ(log->Append(Payload(5, 500)).status().code(), StatusCode::kIOError);
  // Broken: nothing further is accepted, and Sync does not pretend.
  EXPECT_EQ(log->Append(Payload(6, 500)).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(log->Sync().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(log->durable_end(), durable);
  log.reset();
  fs_.ClearFaults();

  auto reopened = Reopen();
  EXPECT_EQ(reopened->recovery().torn_tail, durable);
  EXPECT_EQ(reopened->recovery().torn_tail_bytes, 250u);
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(0, 5, 500)));
  ASSERT_TRUE(reopened->Append(Payload(5, 500)).ok());
}

TEST_F(FaultTest, FailedSyncBreaksTheLogWithoutAdvancingTheDurableEnd) {
  auto log = Open();
  ASSERT_TRUE(log->Append("a").ok());
  ASSERT_TRUE(log->Sync().ok());
  Position durable = log->durable_end();
  ASSERT_TRUE(log->Append("b").ok());
  fs_.FailSync(1, EIO);
  EXPECT_EQ(log->Sync().code(), StatusCode::kIOError);
  EXPECT_EQ(log->durable_end(), durable);
  EXPECT_EQ(log->MarkAcknowledged(log->end()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log->Append("c").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"a"})));
}

TEST_F(FaultTest, CrashLosesOnlyUnsyncedRecords) {
  auto log = Open();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(log->Append(Payload(i, 120)).ok());
  ASSERT_TRUE(log->Sync().ok());
  for (int i = 100; i < 150; ++i) ASSERT_TRUE(log->Append(Payload(i, 120)).ok());
  ASSERT_TRUE(fs_.Crash().ok());
  log.reset();

  auto reopened = Reopen();
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(0, 100, 120)));
  ASSERT_TRUE(reopened->Append(Payload(100, 120)).ok());
  ASSERT_TRUE(reopened->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(0, 101, 120)));
}

TEST_F(FaultTest, CrashKeepsEverySyncedRecordAcrossRolls) {
  auto log = Open(2048);
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(log->Append(Payload(i, 300)).ok());
    if (i % 9 == 0) {
      ASSERT_TRUE(log->Sync().ok());
    }
  }
  ASSERT_TRUE(log->Sync().ok());
  for (int i = 60; i < 70; ++i) ASSERT_TRUE(log->Append(Payload(i, 300)).ok());  // rolls, unsynced
  ASSERT_GT(SegmentsIn(dir_.path()).size(), 5u);
  ASSERT_TRUE(fs_.Crash().ok());
  log.reset();

  // Every synced record survives, and so do the records in segments sealed by a roll (a roll
  // syncs the old segment and the new one's directory entry); what is lost is a suffix.
  auto reopened = Reopen(2048);
  std::vector<std::string> got = Unacknowledged(reopened.get());
  EXPECT_GE(got.size(), 60u);
  EXPECT_LT(got.size(), 70u);
  EXPECT_TRUE(SamePayloads(got, Expected(0, int(got.size()), 300)));
}

TEST_F(FaultTest, CrashAfterAFailedAppendLeavesNoTrace) {
  auto log = Open();
  ASSERT_TRUE(log->Append(Payload(0, 100)).ok());
  ASSERT_TRUE(log->Sync().ok());
  fs_.FailWrite(1, EIO, /*written_first=*/60);
  fs_.FailTruncates(EIO);
  EXPECT_FALSE(log->Append(Payload(1, 100)).ok());
  ASSERT_TRUE(fs_.Crash().ok());  // the 60 bytes were never synced
  log.reset();
  fs_.ClearFaults();
  auto reopened = Reopen();
  EXPECT_TRUE(reopened->recovery().clean()) << reopened->recovery().ToString();
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(0, 1, 100)));
}

TEST_F(FaultTest, EnospcWhileRollingKeepsTheLogUsable) {
  auto log = Open(1000);
  ASSERT_TRUE(log->Append(Payload(0, 600)).ok());
  // The next append must roll; creating segment 2 fails on its header write.
  fs_.FailWrite(1, ENOSPC, 0, false, SegmentFileName(2));
  EXPECT_EQ(log->Append(Payload(1, 600)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(log->end().segment, 1u);
  ASSERT_TRUE(log->Append(Payload(1, 600)).ok());  // the roll is retried and succeeds
  EXPECT_EQ(log->end().segment, 2u);
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), Expected(0, 2, 600)));
}

TEST_F(FaultTest, FailedAckWriteKeepsTheOldAcknowledgement) {
  auto log = Open(1000);
  Position a = log->Append(Payload(0, 600)).value();
  Position b = log->Append(Payload(1, 600)).value();
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->MarkAcknowledged(a).ok());
  fs_.FailWrite(1, ENOSPC, 10, false, "/ACK.tmp");
  EXPECT_EQ(log->MarkAcknowledged(b).code(), StatusCode::kUnavailable);
  EXPECT_EQ(log->acknowledged(), a);
  EXPECT_EQ(SegmentsIn(dir_.path()), (std::vector<uint64_t>{2}));  // b's segment is kept
  log.reset();
  auto reopened = Reopen(1000);
  EXPECT_TRUE(reopened->recovery().clean()) << reopened->recovery().ToString();
  EXPECT_EQ(reopened->acknowledged(), a);
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(1, 2, 600)));
}

TEST_F(FaultTest, CrashRightAfterAcknowledgingKeepsTheAcknowledgement) {
  auto log = Open(1000);
  Position a = log->Append(Payload(0, 600)).value();
  ASSERT_TRUE(log->Append(Payload(1, 600)).ok());
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->MarkAcknowledged(a).ok());
  ASSERT_TRUE(fs_.Crash().ok());
  log.reset();
  auto reopened = Reopen(1000);
  EXPECT_EQ(reopened->acknowledged(), a);
  EXPECT_TRUE(SamePayloads(Unacknowledged(reopened.get()), Expected(1, 2, 600)));
}

}  // namespace
}  // namespace cohort::wal
