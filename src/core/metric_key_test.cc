#include "core/metric_key.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort {
namespace {

TEST(InvalidKeyReason, NamesEveryBrokenRuleAndAcceptsTheRest) {
  EXPECT_EQ(InvalidKeyReason("loss"), "");
  EXPECT_EQ(InvalidKeyReason("train/caf\xc3\xa9"), "");
  EXPECT_EQ(InvalidKeyReason(std::string(256, 'k')), "");
  EXPECT_EQ(InvalidKeyReason(""), "is empty");
  EXPECT_EQ(InvalidKeyReason(std::string(257, 'k')), "is longer than 256 bytes");
  EXPECT_EQ(InvalidKeyReason(std::string("a\0b", 3)), "contains a NUL byte");
  EXPECT_EQ(InvalidKeyReason("bad\xff"), "is not valid UTF-8");
  EXPECT_NE(InvalidKeyReason("system/gpu.0.temp").find("reserved for system metrics"),
            std::string_view::npos);
  EXPECT_EQ(InvalidKeyReason("systemic/x"), "");
}

}  // namespace
}  // namespace cohort
