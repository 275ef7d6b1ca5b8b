#include "wal/log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "wal/ack_file.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

using testing::Drain;
using testing::FlipByte;
using testing::NoSyncFileSystem;
using testing::Payload;
using testing::ReadRaw;
using testing::SamePayloads;
using testing::SegmentsIn;
using testing::TempDir;
using testing::WriteRaw;

std::unique_ptr<Log> MustOpen(const std::string& dir, LogOptions options = {}) {
  Result<std::unique_ptr<Log>> log = Log::Open(dir, options);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

std::vector<std::string> Payloads(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const Record& r : records) out.push_back(r.payload);
  return out;
}

std::vector<std::string> Unacknowledged(Log* log) {
  return Payloads(Drain(log->ReadUnacknowledged().get()));
}

TEST(Log, AppendSyncReadRoundTrip) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  ASSERT_TRUE(log);
  EXPECT_TRUE(log->recovery().clean()) << log->recovery().ToString();
  ASSERT_TRUE(log->Append("a").ok());
  ASSERT_TRUE(log->Append("bb").ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"a", "bb"})));
}

TEST(Log, ReadersSeeOnlyDurableRecords) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  std::unique_ptr<Reader> reader = log->ReadUnacknowledged();
  Record r;
  ASSERT_TRUE(log->Append("first").ok());
  EXPECT_FALSE(*reader->Next(&r));
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(*reader->Next(&r));
  EXPECT_EQ(r.payload, "first");
  EXPECT_FALSE(*reader->Next(&r));  // the same reader follows the log as it grows
  ASSERT_TRUE(log->Append("second").ok());
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(*reader->Next(&r));
  EXPECT_EQ(r.payload, "second");
}

TEST(Log, ReaderFollowsRolls) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto log = MustOpen(dir.path(), {.fs = &fs, .segment_size = 2000});
  std::unique_ptr<Reader> reader = log->ReadUnacknowledged();
  std::vector<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(log->Append(Payload(i, 300)).ok());
    if (i % 7 == 0) {
      ASSERT_TRUE(log->Sync().ok());
      for (std::string& p : Payloads(Drain(reader.get()))) seen.push_back(std::move(p));
    }
  }
  ASSERT_TRUE(log->Sync().ok());
  for (std::string& p : Payloads(Drain(reader.get()))) seen.push_back(std::move(p));
  ASSERT_EQ(seen.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(seen[i] == Payload(i, 300));
  EXPECT_GT(SegmentsIn(dir.path()).size(), 20u);
}

TEST(Log, AcknowledgedSegmentsAreDeletedAndStayAcknowledgedAfterReopen) {
  TempDir dir;
  NoSyncFileSystem fs;
  LogOptions options{.fs = &fs, .segment_size = 4096};
  std::vector<Position> ends;
  {
    auto log = MustOpen(dir.path(), options);
    for (int i = 0; i < 100; ++i) ends.push_back(log->Append(Payload(i, 500)).value());
    ASSERT_TRUE(log->Sync().ok());
    size_t before = SegmentsIn(dir.path()).size();
    ASSERT_TRUE(log->MarkAcknowledged(ends[59]).ok());
    std::vector<uint64_t> after = SegmentsIn(dir.path());
    EXPECT_LT(after.size(), before);
    // Exactly the segments wholly below the acknowledged position are gone.
    EXPECT_EQ(after.front(), ends[59].segment);
    std::vector<std::string> left = Unacknowledged(log.get());
    ASSERT_EQ(left.size(), 40u);
    EXPECT_TRUE(left[0] == Payload(60, 500));
  }
  auto log = MustOpen(dir.path(), options);
  EXPECT_TRUE(log->recovery().clean()) << log->recovery().ToString();
  EXPECT_EQ(log->acknowledged(), ends[59]);
  std::vector<std::string> left = Unacknowledged(log.get());
  ASSERT_EQ(left.size(), 40u);
  EXPECT_TRUE(left[0] == Payload(60, 500));
  EXPECT_TRUE(left[39] == Payload(99, 500));
}

TEST(Log, AcknowledgingTheEndOfASealedSegmentDeletesIt) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto log = MustOpen(dir.path(), {.fs = &fs, .segment_size = 1000});
  Position a = log->Append(std::string(600, 'a')).value();
  ASSERT_TRUE(log->Append(std::string(600, 'b')).ok());  // rolls: segment 1 ends at `a`
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_EQ(SegmentsIn(dir.path()), (std::vector<uint64_t>{1, 2}));
  ASSERT_TRUE(log->MarkAcknowledged(a).ok());
  EXPECT_EQ(SegmentsIn(dir.path()), (std::vector<uint64_t>{2}));
}

TEST(Log, ActiveSegmentIsNeverDeleted) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  Position end = log->Append("x").value();
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->MarkAcknowledged(end).ok());
  EXPECT_EQ(SegmentsIn(dir.path()), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(Unacknowledged(log.get()).empty());
  ASSERT_TRUE(log->Append("y").ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"y"})));
}

TEST(Log, CannotAcknowledgePastTheDurableEnd) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  Position end = log->Append("not yet synced").value();
  EXPECT_EQ(log->MarkAcknowledged(end).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log->acknowledged(), Position{});
}

TEST(Log, AcknowledgementNeverMovesBackwards) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  Position a = log->Append("a").value();
  Position b = log->Append("b").value();
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->MarkAcknowledged(b).ok());
  ASSERT_TRUE(log->MarkAcknowledged(a).ok());
  EXPECT_EQ(log->acknowledged(), b);
}

// The tentpole recovery property: a crash can cut the last record anywhere.
TEST(Log, TornTailAtEveryOffsetOfTheLastRecordIsCutAndAppendsContinue) {
  NoSyncFileSystem fs;
  // Build one log whose last record starts 5 bytes before a block boundary (so it begins with
  // padding) and spans into the next block.
  TempDir golden;
  const size_t first = kBlockSize - kSegmentHeaderSize - kFragmentHeaderSize - 5;
  Position last_start, last_end;
  {
    auto log = MustOpen(golden.path(), {.fs = &fs});
    last_start = log->Append(Payload(0, first)).value();
    last_end = log->Append(Payload(1, 200)).value();
    ASSERT_TRUE(log->Close().ok());
  }
  ASSERT_EQ(last_start.offset, kBlockSize - 5);
  const std::string bytes = ReadRaw(golden.File(SegmentFileName(1)));
  ASSERT_EQ(bytes.size(), last_end.offset);

  for (uint64_t cut = last_start.offset + 1; cut < last_end.offset; ++cut) {
    TempDir dir;
    WriteRaw(dir.File(SegmentFileName(1)), bytes.substr(0, cut));
    {
      auto log = MustOpen(dir.path(), {.fs = &fs});
      ASSERT_TRUE(log);
      const RecoveryReport& rep = log->recovery();
      ASSERT_EQ(rep.torn_tail, last_start) << "cut " << cut;
      ASSERT_EQ(rep.torn_tail_bytes, cut - last_start.offset) << "cut " << cut;
      EXPECT_TRUE(rep.damage.empty());
      EXPECT_EQ(log->end(), last_start);
      ASSERT_TRUE(log->Append("after").ok());
      ASSERT_TRUE(log->Close().ok());
    }
    auto log = MustOpen(dir.path(), {.fs = &fs});
    ASSERT_TRUE(log->recovery().clean()) << "cut " << cut << ": " << log->recovery().ToString();
    std::vector<std::string> got = Unacknowledged(log.get());
    ASSERT_EQ(got.size(), 2u) << "cut " << cut;
    EXPECT_TRUE(got[0] == Payload(0, first));
    EXPECT_EQ(got[1], "after");
  }
}

TEST(Log, FlippedByteInAnOlderSegmentIsReportedWithItsOffset) {
  TempDir dir;
  NoSyncFileSystem fs;
  LogOptions options{.fs = &fs, .segment_size = 20000};
  std::vector<Position> ends;
  {
    auto log = MustOpen(dir.path(), options);
    for (int i = 0; i < 60; ++i) ends.push_back(log->Append(Payload(i, 1000)).value());
    ASSERT_TRUE(log->Close().ok());
  }
  // Record 5 lies in segment 1 (sealed); flip a byte of its payload.
  ASSERT_EQ(ends[5].segment, 1u);
  Position victim = ends[4];
  FlipByte(dir.File(SegmentFileName(1)), victim.offset + kFragmentHeaderSize + 10);

  auto log = MustOpen(dir.path(), options);
  std::unique_ptr<Reader> reader = log->ReadUnacknowledged();
  std::vector<Record> records = Drain(reader.get());
  std::vector<Damage> damage = reader->TakeDamage();
  ASSERT_EQ(damage.size(), 1u);
  EXPECT_EQ(damage[0].position, victim);
  EXPECT_EQ(damage[0].reason, "checksum mismatch");
  // Records 0..4 come back intact; the rest of the block is lost; later segments are read.
  ASSERT_GE(records.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(records[i].payload == Payload(i, 1000));
  EXPECT_EQ(records[5].position.segment, 2u);
  EXPECT_TRUE(records.back().payload == Payload(59, 1000));
}

TEST(Log, DamageInTheLastSegmentKeepsLaterRecordsAndAppendsGoToANewSegment) {
  TempDir dir;
  NoSyncFileSystem fs;
  std::vector<Position> ends;
  {
    auto log = MustOpen(dir.path(), {.fs = &fs});
    for (int i = 0; i < 80; ++i) ends.push_back(log->Append(Payload(i, 1000)).value());
    ASSERT_TRUE(log->Close().ok());
  }
  FlipByte(dir.File(SegmentFileName(1)), ends[2].offset + kFragmentHeaderSize + 1);  // record 3
  auto log = MustOpen(dir.path(), {.fs = &fs});
  const RecoveryReport& rep = log->recovery();
  ASSERT_EQ(rep.damage.size(), 1u) << rep.ToString();
  EXPECT_EQ(rep.damage[0].position, ends[2]);
  EXPECT_EQ(rep.torn_tail_bytes, 0u);  // records after the damage are not cut off
  EXPECT_EQ(log->end().segment, 2u);
  ASSERT_TRUE(log->Append("new").ok());
  ASSERT_TRUE(log->Sync().ok());
  // Records 0 to 2 (the flip is in record 3, which starts at ends[2]), then, after
  // resynchronising at block 1, every record that starts in block 1 or later, then the new one.
  size_t resync = 1;
  while (ends[resync - 1].offset < kBlockSize) ++resync;
  std::vector<std::string> want = {Payload(0, 1000), Payload(1, 1000), Payload(2, 1000)};
  for (size_t i = resync; i < 80; ++i) want.push_back(Payload(i, 1000));
  want.push_back("new");
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), want));
}

TEST(Log, CorruptAckFileFallsBackToResendingEverything) {
  TempDir dir;
  NoSyncFileSystem fs;
  LogOptions options{.fs = &fs, .segment_size = 4096};
  {
    auto log = MustOpen(dir.path(), options);
    std::vector<Position> ends;
    for (int i = 0; i < 50; ++i) ends.push_back(log->Append(Payload(i, 300)).value());
    ASSERT_TRUE(log->Sync().ok());
    ASSERT_TRUE(log->MarkAcknowledged(ends[29]).ok());
  }
  uint64_t first_left = SegmentsIn(dir.path()).front();
  for (uint64_t at = 0; at < kAckFileSize; ++at) {
    std::string good = ReadRaw(dir.File(kAckFileName));
    FlipByte(dir.File(kAckFileName), at);
    auto log = MustOpen(dir.path(), options);
    ASSERT_TRUE(log);
    EXPECT_FALSE(log->recovery().ack_error.ok()) << "byte " << at;
    EXPECT_EQ(log->acknowledged(), Position{});
    // Nothing acknowledged was lost by the fallback: everything still on disk is re-sent.
    EXPECT_EQ(SegmentsIn(dir.path()).front(), first_left);
    std::vector<std::string> left = Unacknowledged(log.get());
    EXPECT_GE(left.size(), 20u);
    EXPECT_TRUE(left.back() == Payload(49, 300));
    EXPECT_TRUE(std::filesystem::exists(dir.File("ACK.corrupt")));
    log.reset();
    WriteRaw(dir.File(kAckFileName), good);  // restore for the next byte
  }
}

TEST(Log, TruncatedOrGarbageAckFileIsDistrusted) {
  for (std::string contents :
       {std::string(), std::string("COHRTACK"), std::string(32, '\xff'), std::string(4096, 'x')}) {
    TempDir dir;
    {
      auto log = MustOpen(dir.path());
      ASSERT_TRUE(log->Append("r").ok());
      ASSERT_TRUE(log->Sync().ok());
    }
    WriteRaw(dir.File(kAckFileName), contents);
    auto log = MustOpen(dir.path());
    ASSERT_TRUE(log);
    EXPECT_EQ(log->recovery().ack_error.code(), StatusCode::kCorruption);
    EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"r"})));
  }
}

TEST(Log, AckFileBeyondTheEndOfTheLogIsDistrusted) {
  TempDir dir;
  {
    auto log = MustOpen(dir.path());
    ASSERT_TRUE(log->Append("kept").ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  // A well-formed ack file that claims more than the log holds (a lying disk, a bad restore).
  ASSERT_TRUE(WriteAckFile(FileSystem::Default(), dir.path(), Position{1, 1 << 20}).ok());
  {
    auto log = MustOpen(dir.path());
    EXPECT_EQ(log->recovery().ack_error.code(), StatusCode::kCorruption);
    EXPECT_EQ(log->acknowledged(), Position{});
    ASSERT_TRUE(log->Append("new").ok());  // must not count as acknowledged after a reopen
    ASSERT_TRUE(log->Sync().ok());
  }
  auto log = MustOpen(dir.path());
  EXPECT_TRUE(log->recovery().ack_error.ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"kept", "new"})));
}

TEST(Log, StaleAckTempFileIsRemovedAndTheAckKept) {
  TempDir dir;
  Position end;
  {
    auto log = MustOpen(dir.path());
    end = log->Append("r").value();
    ASSERT_TRUE(log->Sync().ok());
    ASSERT_TRUE(log->MarkAcknowledged(end).ok());
  }
  WriteRaw(dir.File("ACK.tmp"), "half-written");
  auto log = MustOpen(dir.path());
  EXPECT_TRUE(log->recovery().clean());
  EXPECT_EQ(log->acknowledged(), end);
  EXPECT_FALSE(std::filesystem::exists(dir.File("ACK.tmp")));
}

TEST(Log, OpenCreatesMissingParentsOnlyWhenAsked) {
  TempDir dir;
  std::string nested = dir.File("a/b/wal");
  EXPECT_EQ(Log::Open(nested, {.create_if_missing = false}).status().code(), StatusCode::kNotFound);
  auto log = MustOpen(nested);
  ASSERT_TRUE(log);
  EXPECT_EQ(SegmentsIn(nested), (std::vector<uint64_t>{kFirstSegment}));
}

TEST(Log, SecondOpenOfTheSameDirectoryFails) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  EXPECT_EQ(Log::Open(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(log->Close().ok());
  EXPECT_TRUE(Log::Open(dir.path()).ok());  // Close releases the lock
}

TEST(Log, LastSegmentShorterThanItsHeaderIsReplaced) {
  TempDir dir;
  {
    auto log = MustOpen(dir.path(), {.segment_size = 1000});
    ASSERT_TRUE(log->Append(std::string(600, 'a')).ok());
    ASSERT_TRUE(log->Close().ok());
  }
  // A crash while segment 2 was being created left 10 bytes of its header.
  WriteRaw(dir.File(SegmentFileName(2)), EncodeSegmentHeader(2).substr(0, 10));
  auto log = MustOpen(dir.path(), {.segment_size = 1000});
  EXPECT_EQ(log->recovery().torn_tail, (Position{2, 0}));
  EXPECT_EQ(log->recovery().torn_tail_bytes, 10u);
  ASSERT_TRUE(log->Append("b").ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()),
                           (std::vector<std::string>{std::string(600, 'a'), "b"})));
}

TEST(Log, LastSegmentWithABadHeaderIsSetAside) {
  TempDir dir;
  {
    auto log = MustOpen(dir.path());
    ASSERT_TRUE(log->Append("lost").ok());
    ASSERT_TRUE(log->Close().ok());
  }
  FlipByte(dir.File(SegmentFileName(1)), 2);
  auto log = MustOpen(dir.path());
  ASSERT_EQ(log->recovery().damage.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir.File(SegmentFileName(1) + ".corrupt")));
  EXPECT_EQ(log->end(), (Position{2, kSegmentHeaderSize}));
  ASSERT_TRUE(log->Append("fresh").ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"fresh"})));
}

TEST(Log, CloseLetsReadersDrainAndRefusesAppends) {
  TempDir dir;
  auto log = MustOpen(dir.path());
  ASSERT_TRUE(log->Append("a").ok());
  ASSERT_TRUE(log->Close().ok());  // syncs
  EXPECT_TRUE(SamePayloads(Unacknowledged(log.get()), (std::vector<std::string>{"a"})));
  EXPECT_EQ(log->Append("b").status().code(), StatusCode::kFailedPrecondition);
}

TEST(Log, OneAppenderAndOneReaderAcknowledgerRunConcurrently) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto log = MustOpen(dir.path(), {.fs = &fs, .segment_size = 16 * 1024});
  constexpr int kRecords = 20000;
  std::atomic<bool> failed{false};
  std::thread appender([&] {
    for (int i = 0; i < kRecords; ++i) {
      if (!log->Append(Payload(i, 50 + i % 400)).ok()) failed = true;
      if (i % 37 == 0 && !log->Sync().ok()) failed = true;
    }
    if (!log->Sync().ok()) failed = true;
  });
  std::unique_ptr<Reader> reader = log->ReadUnacknowledged();
  int next = 0;
  Record r;
  while (next < kRecords && !failed) {
    Result<bool> got = reader->Next(&r);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (!*got) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(r.payload, Payload(next, 50 + next % 400)) << "record " << next;
    ++next;
    if (next % 100 == 0) {
      ASSERT_TRUE(log->MarkAcknowledged(r.next).ok());
    }
  }
  appender.join();
  ASSERT_FALSE(failed);
  EXPECT_TRUE(reader->TakeDamage().empty());
  ASSERT_TRUE(log->MarkAcknowledged(r.next).ok());
  EXPECT_EQ(SegmentsIn(dir.path()).size(), 1u);  // only the active segment is left
}

}  // namespace
}  // namespace cohort::wal
