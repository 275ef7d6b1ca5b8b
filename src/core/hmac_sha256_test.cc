#include "core/hmac_sha256.h"

#include <gtest/gtest.h>

#include "core/text_encoding.h"

namespace cohort {
namespace {

// RFC 4231, section 4: the HMAC-SHA-256 test cases.
TEST(HmacSha256Test, Rfc4231Vectors) {
  struct Case {
    std::string key, data, hex;
  };
  std::string key4;
  for (char c = 1; c <= 25; ++c) key4 += c;
  const Case cases[] = {
      {std::string(20, '\x0b'), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {key4, std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::string(131, '\xaa'),
       "This is a test using a larger than block-size key and a larger than block-size data. "
       "The key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(HmacSha256Hex(c.key, c.data), c.hex) << c.data;
    EXPECT_EQ(HexLower(HmacSha256(c.key, c.data)), c.hex);
    EXPECT_EQ(HmacSha256(c.key, c.data).size(), 32u);
  }
  // Test case 5: the output truncated to 128 bits.
  EXPECT_EQ(HmacSha256Hex(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
}

TEST(HmacSha256Test, EmptyKeyAndMessage) {
  // Python: hmac.new(b"", b"", hashlib.sha256).hexdigest()
  EXPECT_EQ(HmacSha256Hex("", ""),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

}  // namespace
}  // namespace cohort
