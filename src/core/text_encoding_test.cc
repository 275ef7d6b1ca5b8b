#include "core/text_encoding.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(TextEncodingTest, HexLowerWritesTwoDigitsPerByte) {
  EXPECT_EQ(HexLower(std::string("\x00\x0f\xa5\xff", 4)), "000fa5ff");
  EXPECT_EQ(HexLower(""), "");
}

TEST(TextEncodingTest, Base64RoundTripsEveryLengthAndPads) {
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(char(i));
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string part = all.substr(0, n);
    EXPECT_EQ(Base64Decode(Base64Encode(part)), part) << n;
  }
}

TEST(TextEncodingTest, Base64DecodeTakesTheUrlAlphabetAndRefusesOtherCharacters) {
  EXPECT_EQ(Base64Decode("-_8"), Base64Decode("+/8"));
  EXPECT_EQ(Base64Decode("Zm9v"), "foo");
  EXPECT_EQ(Base64Decode("Zg"), "f");  // padding optional
  EXPECT_EQ(Base64Decode("Zm9v!"), "");
}

TEST(TextEncodingTest, PercentEncodeKeepsOnlyUnreservedBytes) {
  EXPECT_EQ(PercentEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(PercentEncode("a b/é"), "a%20b%2F%C3%A9");
  EXPECT_EQ(PercentEncode("dir/a b", true), "dir/a%20b");
}

}  // namespace
}  // namespace cohort
