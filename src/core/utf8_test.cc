#include "core/utf8.h"

#include <gtest/gtest.h>

namespace cohort::utf8 {
namespace {

TEST(Utf8, AcceptsMultibyteAndRejectsSurrogatesOverlongsAndTruncation) {
  EXPECT_TRUE(IsValid(""));
  EXPECT_TRUE(IsValid("h\xc3\xa9llo \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValid("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValid("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValid("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValid("\xc3"));              // cut short
  EXPECT_FALSE(IsValid("a\xff"));
}

TEST(Utf8, SanitizedTextReplacesInvalidBytesAndCutsOnACharacterBoundary) {
  std::string out;
  AppendSanitized("ok\xff!", 100, &out);
  EXPECT_EQ(out, "ok\xEF\xBF\xBD!");
  out.clear();
  AppendSanitized("ab\xc3\xa9", 3, &out);  // the 2-byte character does not fit: cut before it
  EXPECT_EQ(out, "ab");
  out.clear();
  AppendSanitized("\xff\xff", 4, &out);  // one replacement fits, the second does not
  EXPECT_EQ(out, "\xEF\xBF\xBD");
  EXPECT_TRUE(IsValid(out));
}

}  // namespace
}  // namespace cohort::utf8
