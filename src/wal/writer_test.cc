#include "wal/writer.h"

#include <gtest/gtest.h>

#include <random>

#include "wal/reader.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

using testing::DrainDirectory;
using testing::NoSyncFileSystem;
using testing::Payload;
using testing::SegmentsIn;
using testing::TempDir;

TEST(Writer, RoundTripsManyRecordsAcrossSegmentRolls) {
  TempDir dir;
  NoSyncFileSystem fs;
  constexpr uint64_t kSegmentSize = 64 * 1024;
  Result<std::unique_ptr<Writer>> w = Writer::Create(&fs, dir.path(), kFirstSegment, kSegmentSize);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::mt19937_64 rng(7);
  std::vector<std::string> payloads;
  std::vector<Position> ends;
  for (int i = 0; i < 3000; ++i) {
    size_t size = rng() % 8 == 0 ? rng() % 100000 : rng() % 300;
    payloads.push_back(Payload(i, size));
    Result<Position> end = (*w)->Append(payloads.back());
    ASSERT_TRUE(end.ok()) << end.status().ToString();
    ends.push_back(*end);
  }
  ASSERT_TRUE((*w)->Close().ok());

  std::vector<uint64_t> segments = SegmentsIn(dir.path());
  ASSERT_GT(segments.size(), 10u);
  for (size_t i = 0; i < segments.size(); ++i) EXPECT_EQ(segments[i], kFirstSegment + i);

  std::vector<Damage> damage;
  std::vector<Record> records = DrainDirectory(dir.path(), {}, &damage);
  EXPECT_TRUE(damage.empty());
  ASSERT_EQ(records.size(), payloads.size());
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].payload, payloads[i]) << "record " << i;
    EXPECT_EQ(records[i].next, ends[i]);
    if (i > 0 && records[i].position.segment == records[i - 1].position.segment) {
      EXPECT_EQ(records[i].position, records[i - 1].next);  // contiguous within a segment
    }
  }
}

TEST(Writer, RollsBeforeARecordWouldPassTheThreshold) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto w = std::move(Writer::Create(&fs, dir.path(), 1, 1000).value());
  ASSERT_TRUE(w->Append(std::string(500, 'a')).ok());
  ASSERT_EQ(w->segment(), 1u);
  ASSERT_TRUE(w->Append(std::string(500, 'b')).ok());  // 24 + 509 + 509 > 1000
  EXPECT_EQ(w->segment(), 2u);
  EXPECT_EQ(testing::ReadRaw(dir.File(SegmentFileName(1))).size(), 24u + 509u);
}

TEST(Writer, RecordLargerThanTheThresholdGetsASegmentOfItsOwn) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto w = std::move(Writer::Create(&fs, dir.path(), 1, 1000).value());
  ASSERT_TRUE(w->Append("small").ok());
  Result<Position> big = w->Append(std::string(5000, 'x'));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->segment, 2u);
  ASSERT_TRUE(w->Append("after").ok());
  EXPECT_EQ(w->segment(), 3u);
  ASSERT_TRUE(w->Close().ok());
  std::vector<Record> records = DrainDirectory(dir.path());
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].payload.size(), 5000u);
}

TEST(Writer, RejectsPayloadAboveTheRecordCap) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto w = std::move(Writer::Create(&fs, dir.path(), 1, kMaxRecordSize * 2).value());
  EXPECT_EQ(w->Append(std::string(kMaxRecordSize + 1, 'x')).status().code(),
            StatusCode::kPayloadTooLarge);
  EXPECT_TRUE(w->Append("still fine").ok());
}

TEST(Writer, CreateRefusesAnExistingSegment) {
  TempDir dir;
  NoSyncFileSystem fs;
  ASSERT_TRUE(Writer::Create(&fs, dir.path(), 3, 1 << 20).ok());
  EXPECT_EQ(Writer::Create(&fs, dir.path(), 3, 1 << 20).status().code(),
            StatusCode::kAlreadyExists);
}

TEST(Writer, SyncedEndFollowsSync) {
  TempDir dir;
  auto w = std::move(Writer::Create(FileSystem::Default(), dir.path(), 1, 1 << 20).value());
  Position end = w->Append("abc").value();
  EXPECT_LT(w->synced_end(), end);
  ASSERT_TRUE(w->Sync().ok());
  EXPECT_EQ(w->synced_end(), end);
}

TEST(Reader, StartsMidLogAtARecordPosition) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto w = std::move(Writer::Create(&fs, dir.path(), 1, 4096).value());
  std::vector<Position> ends;
  for (int i = 0; i < 100; ++i) ends.push_back(w->Append(Payload(i, 100)).value());
  ASSERT_TRUE(w->Close().ok());
  std::vector<Record> records = DrainDirectory(dir.path(), ends[49]);
  ASSERT_EQ(records.size(), 50u);
  EXPECT_TRUE(records[0].payload == Payload(50, 100));
}

TEST(Reader, OpenDirectoryReportsATornTailAsDamage) {
  TempDir dir;
  NoSyncFileSystem fs;
  auto w = std::move(Writer::Create(&fs, dir.path(), 1, 1 << 20).value());
  ASSERT_TRUE(w->Append("one").ok());
  Position one = w->end();
  ASSERT_TRUE(w->Append(std::string(100, 't')).ok());
  ASSERT_TRUE(w->Close().ok());
  ASSERT_TRUE(fs.Truncate(dir.File(SegmentFileName(1)), one.offset + 50).ok());
  std::vector<Damage> damage;
  std::vector<Record> records = DrainDirectory(dir.path(), {}, &damage);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(damage.size(), 1u);
  EXPECT_EQ(damage[0].position, one);
  EXPECT_EQ(damage[0].bytes, 50u);
}

}  // namespace
}  // namespace cohort::wal
