#include "core/coding.h"

#include <gtest/gtest.h>

#include "core/crc32c.h"
#include "core/ids.h"

namespace cohort {
namespace {

TEST(Crc32c, MatchesKnownVector) {
  // RFC 3720 B.4: 32 bytes of zeros.
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u);
}

TEST(Varint, RoundTripsExtremes) {
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 300ull, ~0ull}) {
    std::string buf;
    coding::PutVarint64(&buf, v);
    std::string_view in(buf);
    uint64_t got = 0;
    ASSERT_TRUE(coding::GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
  }
}

TEST(Varint, TruncatedInputFails) {
  std::string buf;
  coding::PutVarint64(&buf, 1ull << 40);
  buf.pop_back();
  std::string_view in(buf);
  uint64_t got;
  EXPECT_FALSE(coding::GetVarint64(&in, &got));
}

TEST(ZigZag, RoundTripsNegatives) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(coding::UnZigZag(coding::ZigZag(v)), v);
  }
}

TEST(Ids, RandomBase36HasRequestedLengthAndAlphabet) {
  auto id = ids::RandomBase36(8);
  EXPECT_EQ(id.size(), 8u);
  EXPECT_TRUE(ids::IsValidId(id));
  EXPECT_NE(id, ids::RandomBase36(8));
  EXPECT_FALSE(ids::IsValidId("a/b"));
}

}  // namespace
}  // namespace cohort
