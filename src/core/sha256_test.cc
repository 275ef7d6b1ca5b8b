#include "core/sha256.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(Sha256Test, KnownDigests) {
  EXPECT_EQ(Sha256::Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::Hex("hello\n"),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
}

TEST(Sha256Test, StreamingEqualsOneShotAndStartsOver) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 31 + 7);
  Sha256 h;
  h.Update(std::string_view(data).substr(0, 12345));
  h.Update(std::string_view(data).substr(12345));
  EXPECT_EQ(h.FinishHex(), Sha256::Hex(data));
  h.Update("hello\n");
  EXPECT_EQ(h.FinishHex(), Sha256::Hex("hello\n"));
}

TEST(Sha256Test, CopyFromGoesBackToASnapshot) {
  Sha256 h, snapshot;
  h.Update("hello");
  snapshot.CopyFrom(h);
  h.Update(" bytes to take back");
  h.CopyFrom(snapshot);
  h.Update("\n");
  EXPECT_EQ(h.FinishHex(), Sha256::Hex("hello\n"));
  EXPECT_EQ(snapshot.FinishHex(), Sha256::Hex("hello"));
}

TEST(Sha256Test, IsSha256Hex) {
  EXPECT_TRUE(IsSha256Hex(Sha256::Hex("a")));
  EXPECT_FALSE(IsSha256Hex(""));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace cohort

#include "core/md5.h"
#include "core/text_encoding.h"

namespace cohort {
namespace {
TEST(Md5Test, Base64AsTheWandbClientsNameFiles) {
  // The digest the vendor's SDK sends for "hello\n" (docs of its wire format).
  EXPECT_EQ(Md5Base64("hello\n"), "sZRqySSS0jR8YjW00mERhA==");
}

TEST(Md5Test, PiecesGiveTheDigestOfTheWholeAndTheObjectStartsOver) {
  Md5 md5;
  md5.Update("hel");
  md5.Update("");
  md5.Update("lo\n");
  EXPECT_EQ(Base64Encode(md5.FinishRaw()), "sZRqySSS0jR8YjW00mERhA==");
  md5.Update("hello\n");
  EXPECT_EQ(Base64Encode(md5.FinishRaw()), "sZRqySSS0jR8YjW00mERhA==");
  EXPECT_EQ(Base64Encode(md5.FinishRaw()), Md5Base64(""));
}
}  // namespace
}  // namespace cohort
