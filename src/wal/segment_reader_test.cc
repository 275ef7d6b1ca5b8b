#include "wal/segment_reader.h"

#include <gtest/gtest.h>

#include <random>

#include "core/coding.h"
#include "core/crc32c.h"
#include "wal/test_util.h"

namespace cohort::wal {
namespace {

using testing::Payload;

constexpr uint64_t kSegment = 5;

// A segment built in memory, with the start position of each record.
struct Built {
  std::string bytes;
  std::vector<uint64_t> starts;
  std::vector<std::string> payloads;
};

Built Build(const std::vector<size_t>& sizes) {
  Built b;
  b.bytes = EncodeSegmentHeader(kSegment);
  for (size_t i = 0; i < sizes.size(); ++i) {
    b.payloads.push_back(Payload(i, sizes[i]));
    b.starts.push_back(b.bytes.size());
    EncodeRecord(&b.bytes, b.bytes.size(), b.payloads.back());
  }
  return b;
}

struct ReadBack {
  std::vector<Record> records;
  std::vector<Damage> damage;
};

ReadBack ReadSealed(const std::string& bytes, uint64_t start = 0) {
  ReadBack out;
  SegmentReader reader(kSegment, NewStringSequentialFile(bytes), start);
  Record r;
  while (true) {
    Result<bool> got = reader.Next(bytes.size(), /*sealed=*/true, &r, &out.damage);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || !*got) break;
    out.records.push_back(r);
  }
  return out;
}

TEST(SegmentReader, RoundTripsRecordsOfAwkwardSizes) {
  // Sizes that end exactly on, just before and just after block boundaries, empty records, and
  // records spanning several blocks.
  std::vector<size_t> sizes = {0,
                               1,
                               kBlockSize - kSegmentHeaderSize - 2 * kFragmentHeaderSize - 1,
                               3,
                               0,
                               kBlockSize - kFragmentHeaderSize,
                               5 * kBlockSize + 17,
                               8,
                               kBlockSize - 4,
                               0,
                               100000,
                               1};
  Built b = Build(sizes);
  ReadBack got = ReadSealed(b.bytes);
  EXPECT_TRUE(got.damage.empty()) << got.damage[0].ToString();
  ASSERT_EQ(got.records.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_TRUE(got.records[i].payload == b.payloads[i]) << "record " << i;
    EXPECT_EQ(got.records[i].position, (Position{kSegment, b.starts[i]}));
    uint64_t next = i + 1 < sizes.size() ? b.starts[i + 1] : b.bytes.size();
    EXPECT_EQ(got.records[i].next, (Position{kSegment, next}));
  }
}

TEST(SegmentReader, StartsAtAGivenRecordBoundary) {
  Built b = Build({10, 20, 40000, 30});
  ReadBack got = ReadSealed(b.bytes, b.starts[2]);
  ASSERT_EQ(got.records.size(), 2u);
  EXPECT_TRUE(got.records[0].payload == b.payloads[2]);
  EXPECT_TRUE(got.records[1].payload == b.payloads[3]);
}

TEST(SegmentReader, UnsealedReaderWaitsForTheRestOfARecord) {
  Built b = Build({100, 50000});
  SegmentReader reader(kSegment, NewStringSequentialFile(b.bytes), 0);
  std::vector<Damage> damage;
  Record r;
  ASSERT_TRUE(*reader.Next(b.starts[1] + 20000, false, &r, &damage));
  EXPECT_TRUE(r.payload == b.payloads[0]);
  // Half of the second record is visible: no record, no damage, and the place is kept.
  EXPECT_FALSE(*reader.Next(b.starts[1] + 20000, false, &r, &damage));
  EXPECT_TRUE(damage.empty());
  ASSERT_TRUE(*reader.Next(b.bytes.size(), false, &r, &damage));
  EXPECT_TRUE(r.payload == b.payloads[1]);
  EXPECT_TRUE(damage.empty());
}

TEST(SegmentReader, SealedTruncationAtEveryOffsetOfTheLastRecordIsReported) {
  // The last record starts 4 bytes before a block boundary (padding) and spans into the next
  // block, so the cut points cover padding, headers and both fragments.
  size_t first = kBlockSize - kSegmentHeaderSize - kFragmentHeaderSize - 4;
  Built b = Build({first, 300});
  ASSERT_EQ(b.starts[1], kBlockSize - 4);
  for (uint64_t cut = b.starts[1] + 1; cut < b.bytes.size(); ++cut) {
    ReadBack got = ReadSealed(b.bytes.substr(0, cut));
    ASSERT_EQ(got.records.size(), 1u) << "cut " << cut;
    EXPECT_TRUE(got.records[0].payload == b.payloads[0]);
    ASSERT_EQ(got.damage.size(), 1u) << "cut " << cut;
    EXPECT_EQ(got.damage[0].position.offset, b.starts[1]);
    EXPECT_EQ(got.damage[0].bytes, cut - b.starts[1]);
  }
}

TEST(SegmentReader, FlippedByteIsReportedAtItsRecordAndReadingResumesNextBlock) {
  std::vector<size_t> sizes(40, 1000);  // ~1.2 blocks
  Built b = Build(sizes);
  const size_t victim = 10;
  std::string bad = b.bytes;
  bad[b.starts[victim] + kFragmentHeaderSize + 500] ^= 0x01;
  ReadBack got = ReadSealed(bad);
  ASSERT_FALSE(got.damage.empty());
  EXPECT_EQ(got.damage[0].position, (Position{kSegment, b.starts[victim]}));
  EXPECT_EQ(got.damage[0].reason, "checksum mismatch");
  // Records before the flip are intact; reading resumed in block 1 with records after it.
  ASSERT_GE(got.records.size(), victim + 1);
  for (size_t i = 0; i < victim; ++i) EXPECT_TRUE(got.records[i].payload == b.payloads[i]);
  EXPECT_GE(got.records[victim].position.offset, kBlockSize);
  EXPECT_TRUE(got.records.back().payload == b.payloads.back());
}

TEST(SegmentReader, FlippedBytesYieldOnlyOriginalRecordsInOrder) {
  Built b = Build({10, 0, 300, 5, 40000, 7, 200, 1});
  for (uint64_t at = kSegmentHeaderSize; at < b.bytes.size(); ++at) {
    // Every byte near the start, the block boundary and the end; a sample of the rest.
    bool near = at < 1000 || (at + 1000 > kBlockSize && at < kBlockSize + 1000) ||
                at + 1000 > b.bytes.size();
    if (!near && at % 61 != 0) continue;
    std::string bad = b.bytes;
    bad[at] ^= 0x80;
    ReadBack got = ReadSealed(bad);
    size_t next = 0;  // index into the originals
    for (const Record& r : got.records) {
      while (next < b.starts.size() && b.starts[next] < r.position.offset) ++next;
      ASSERT_LT(next, b.starts.size()) << "flip at " << at;
      EXPECT_TRUE(r.payload == b.payloads[next]) << "flip at " << at;
      ++next;
    }
    // Unless the flip hit zero padding (not checksummed), something was reported.
    if (got.records.size() != b.payloads.size()) {
      EXPECT_FALSE(got.damage.empty());
    }
  }
}

TEST(SegmentReader, FragmentsWithoutAFirstAreReported) {
  Built b = Build({50000});
  // Drop the first fragment: start the segment with the second block's LAST fragment.
  std::string bytes = EncodeSegmentHeader(kSegment);
  bytes.append(kBlockSize - bytes.size(), '\0');  // zeros: bad type, skipped to block 1
  bytes += b.bytes.substr(kBlockSize);
  ReadBack got = ReadSealed(bytes);
  EXPECT_TRUE(got.records.empty());
  ASSERT_EQ(got.damage.size(), 1u);  // both regions merged into one
  EXPECT_EQ(got.damage[0].position.offset, kSegmentHeaderSize);
  EXPECT_EQ(got.damage[0].bytes, bytes.size() - kSegmentHeaderSize);
}

TEST(SegmentReader, BadHeaderSkipsTheWholeSegment) {
  Built b = Build({10, 20});
  std::string bad = b.bytes;
  bad[3] ^= 1;
  ReadBack got = ReadSealed(bad);
  EXPECT_TRUE(got.records.empty());
  ASSERT_EQ(got.damage.size(), 1u);
  EXPECT_EQ(got.damage[0].position.offset, 0u);
  EXPECT_EQ(got.damage[0].bytes, bad.size());
}

TEST(SegmentReader, NewerVersionIsAnError) {
  std::string h(kSegmentMagic);
  coding::PutFixed32(&h, kFormatVersion + 1);
  coding::PutFixed64(&h, kSegment);
  coding::PutFixed32(&h, crc32c::Value(h));
  SegmentReader reader(kSegment, NewStringSequentialFile(h), 0);
  std::vector<Damage> damage;
  Record r;
  EXPECT_EQ(reader.Next(h.size(), true, &r, &damage).status().code(),
            StatusCode::kFailedPrecondition);
}

// Arbitrary bytes must never crash the reader, make it read past its limit, or yield a record
// outside the bytes it was given.
void CheckArbitrary(const std::string& bytes, std::mt19937_64& rng) {
  // Read with a limit that grows in random steps, then sealed.
  SegmentReader reader(kSegment, NewStringSequentialFile(bytes), 0);
  std::vector<Damage> damage;
  Record r;
  uint64_t limit = 0;
  uint64_t last_next = 0;
  for (int step = 0; step < 64 && limit < bytes.size(); ++step) {
    limit = std::min<uint64_t>(bytes.size(), limit + rng() % 20000);
    while (true) {
      Result<bool> got = reader.Next(limit, false, &r, &damage);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      if (!*got) break;
      ASSERT_LE(r.next.offset, limit);
      ASSERT_GE(r.position.offset, last_next);
      ASSERT_LE(r.payload.size(), kMaxRecordSize);
      last_next = r.next.offset;
    }
  }
  while (true) {
    Result<bool> got = reader.Next(bytes.size(), true, &r, &damage);
    ASSERT_TRUE(got.ok() || got.status().code() == StatusCode::kFailedPrecondition);
    if (!got.ok() || !*got) break;
    ASSERT_LE(r.next.offset, bytes.size());
    ASSERT_GE(r.position.offset, last_next);
    last_next = r.next.offset;
  }
  for (const Damage& d : damage) ASSERT_LE(d.position.offset + d.bytes, bytes.size());
}

TEST(SegmentReader, ArbitraryBytesNeverCrash) {
  std::mt19937_64 rng(20240601);
  Built valid = Build({10, 0, 3000, 70000, 5, 200, 33000, 1, 65000, 9});
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes;
    switch (iter % 3) {
      case 0: {  // pure noise, sometimes with a valid header in front
        size_t n = rng() % 100000;
        if (rng() % 2) bytes = EncodeSegmentHeader(kSegment);
        for (size_t i = 0; i < n; ++i) bytes.push_back(char(rng()));
        break;
      }
      case 1: {  // a valid segment with random mutations
        bytes = valid.bytes;
        int flips = 1 + int(rng() % 20);
        for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = char(rng());
        if (rng() % 2) bytes.resize(rng() % bytes.size());
        break;
      }
      case 2: {  // fragment headers with hostile lengths and types
        bytes = EncodeSegmentHeader(kSegment);
        while (bytes.size() < 3 * kBlockSize) {
          coding::PutFixed32(&bytes, uint32_t(rng()));
          uint32_t len = rng() % 4 == 0 ? uint32_t(rng()) : uint32_t(rng() % 40000);
          coding::PutFixed32(&bytes, len);
          bytes.push_back(char(rng() % 6));
          bytes.append(rng() % 200, char(rng()));
        }
        break;
      }
    }
    CheckArbitrary(bytes, rng);
    if (HasFatalFailure()) {
      ADD_FAILURE() << "iteration " << iter;
      return;
    }
  }
}

}  // namespace
}  // namespace cohort::wal
