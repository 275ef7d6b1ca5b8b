#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace cohort {
namespace {

TEST(Crc32c, InstructionAndTablesAgreeOnEveryLengthAlignmentAndSeed) {
  std::mt19937_64 rng(7);
  std::string buf(600, '\0');
  for (char& c : buf) c = char(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t n = 0; n + offset <= buf.size(); n += (n < 70 ? 1 : 37)) {
      const uint32_t seed = uint32_t(rng());
      ASSERT_EQ(crc32c::Extend(seed, buf.data() + offset, n),
                crc32c::ExtendPortable(seed, buf.data() + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
  EXPECT_EQ(crc32c::ExtendPortable(0, "123456789", 9), 0xE3069283u);
  // Extending in pieces equals one pass.
  EXPECT_EQ(crc32c::Extend(crc32c::Value(buf.substr(0, 13)), buf.data() + 13, buf.size() - 13),
            crc32c::Value(buf));
}

}  // namespace
}  // namespace cohort
