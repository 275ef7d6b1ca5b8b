#include "wal/format.h"

#include <gtest/gtest.h>

#include "core/coding.h"
#include "core/crc32c.h"
#include "wal/ack_file.h"

namespace cohort::wal {
namespace {

TEST(SegmentFileName, IsZeroPaddedAndParsesBack) {
  EXPECT_EQ(SegmentFileName(42), "00000000000000000042.wal");
  uint64_t n = 0;
  ASSERT_TRUE(ParseSegmentFileName(SegmentFileName(UINT64_MAX), &n));
  EXPECT_EQ(n, UINT64_MAX);
  EXPECT_LT(SegmentFileName(9), SegmentFileName(10));  // names sort like numbers
}

TEST(SegmentFileName, RejectsOtherNames) {
  uint64_t n = 0;
  EXPECT_FALSE(ParseSegmentFileName("ACK", &n));
  EXPECT_FALSE(ParseSegmentFileName("42.wal", &n));
  EXPECT_FALSE(ParseSegmentFileName("00000000000000000042.wal.corrupt", &n));
  EXPECT_FALSE(ParseSegmentFileName("0000000000000000004x.wal", &n));
  EXPECT_FALSE(ParseSegmentFileName("99999999999999999999.wal", &n));  // overflows uint64
}

TEST(SegmentHeader, RoundTrips) {
  std::string h = EncodeSegmentHeader(7);
  EXPECT_EQ(h.size(), kSegmentHeaderSize);
  EXPECT_TRUE(CheckSegmentHeader(h, 7).ok());
}

TEST(SegmentHeader, EveryFlippedByteIsCorruption) {
  std::string h = EncodeSegmentHeader(7);
  for (size_t i = 0; i < h.size(); ++i) {
    std::string bad = h;
    bad[i] ^= 0x01;
    EXPECT_EQ(CheckSegmentHeader(bad, 7).code(), StatusCode::kCorruption) << "byte " << i;
  }
}

TEST(SegmentHeader, WrongSegmentNumberIsCorruption) {
  EXPECT_EQ(CheckSegmentHeader(EncodeSegmentHeader(7), 8).code(), StatusCode::kCorruption);
}

TEST(SegmentHeader, ShortHeaderIsCorruption) {
  EXPECT_EQ(CheckSegmentHeader(EncodeSegmentHeader(7).substr(0, 23), 7).code(),
            StatusCode::kCorruption);
}

TEST(SegmentHeader, NewerVersionIsFailedPrecondition) {
  std::string h(kSegmentMagic);
  coding::PutFixed32(&h, kFormatVersion + 1);
  coding::PutFixed64(&h, 7);
  coding::PutFixed32(&h, crc32c::Value(h));
  EXPECT_EQ(CheckSegmentHeader(h, 7).code(), StatusCode::kFailedPrecondition);
}

TEST(EncodeRecord, SmallRecordIsOneFullFragment) {
  std::string out;
  uint64_t end = EncodeRecord(&out, kSegmentHeaderSize, "hello");
  EXPECT_EQ(end, kSegmentHeaderSize + kFragmentHeaderSize + 5);
  ASSERT_EQ(out.size(), kFragmentHeaderSize + 5);
  EXPECT_EQ(coding::DecodeFixed32(out.data() + 4), 5u);
  EXPECT_EQ(uint8_t(out[8]), uint8_t(FragmentType::kFull));
  EXPECT_EQ(coding::DecodeFixed32(out.data()), FragmentChecksum(out.data() + 4, 5));
  EXPECT_EQ(out.substr(9), "hello");
}

TEST(EncodeRecord, PadsWhenLessThanAHeaderIsLeftInTheBlock) {
  std::string out;
  uint64_t start = kBlockSize - 5;
  uint64_t end = EncodeRecord(&out, start, "x");
  EXPECT_EQ(end, kBlockSize + kFragmentHeaderSize + 1);
  EXPECT_EQ(out.substr(0, 5), std::string(5, '\0'));
  EXPECT_EQ(uint8_t(out[5 + 8]), uint8_t(FragmentType::kFull));
}

TEST(EncodeRecord, SplitsAtBlockBoundariesIntoFirstMiddleLast) {
  std::string payload(2 * kBlockSize + 100, 'p');
  std::string out;
  uint64_t end = EncodeRecord(&out, kSegmentHeaderSize, payload);
  EXPECT_EQ(end, kSegmentHeaderSize + out.size());
  // Three fragments: one per block touched; none crosses a boundary.
  uint64_t at = kSegmentHeaderSize;
  std::vector<uint8_t> types;
  size_t i = 0;
  while (i < out.size()) {
    uint64_t len = coding::DecodeFixed32(out.data() + i + 4);
    types.push_back(uint8_t(out[i + 8]));
    EXPECT_EQ(at / kBlockSize, (at + kFragmentHeaderSize + len - 1) / kBlockSize);
    i += kFragmentHeaderSize + len;
    at += kFragmentHeaderSize + len;
  }
  EXPECT_EQ(types, (std::vector<uint8_t>{2, 3, 4}));
}

TEST(EncodeRecord, EmptyPayloadIsAFullFragment) {
  std::string out;
  EXPECT_EQ(EncodeRecord(&out, kSegmentHeaderSize, ""), kSegmentHeaderSize + kFragmentHeaderSize);
  EXPECT_EQ(uint8_t(out[8]), uint8_t(FragmentType::kFull));
}

TEST(Position, OrdersBySegmentThenOffset) {
  EXPECT_LT((Position{1, 900}), (Position{2, 24}));
  EXPECT_LT((Position{2, 24}), (Position{2, 25}));
  EXPECT_EQ((Position{3, 4}).ToString(), "3:4");
}

TEST(AckFile, RoundTrips) {
  Result<Position> p = DecodeAck(EncodeAck(Position{12, 3456}));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, (Position{12, 3456}));
}

TEST(AckFile, EveryFlippedByteIsDetected) {
  std::string good = EncodeAck(Position{12, 3456});
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeAck(bad).ok()) << "byte " << i;
  }
}

TEST(AckFile, WrongSizeIsCorruption) {
  std::string good = EncodeAck(Position{1, 24});
  EXPECT_EQ(DecodeAck(good.substr(0, 31)).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeAck(good + "x").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeAck("").status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace cohort::wal
