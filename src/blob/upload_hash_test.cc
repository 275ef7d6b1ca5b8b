#include "blob/upload_hash.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace cohort::blob {
namespace {

// An upload of parts "p0", "p1", ... whose durable bytes are in `stored_`.
class UploadHashesTest : public ::testing::Test {
 protected:
  static constexpr int64_t kParts = 4;

  // A PUT of part n, as the store makes it: fed into the hash while written when it may be.
  Sha256* Begin(int64_t n) {
    Sha256* hash = nullptr;
    EXPECT_TRUE(hashes_.BeginPart("u", n, &hash).ok());
    return hash;
  }
  void Put(int64_t n, const std::string& bytes) {
    Sha256* hash = Begin(n);
    stored_[n] = bytes;
    if (hash != nullptr) hash->Update(bytes);
    End(n, /*durable=*/true, hash != nullptr);
  }
  void End(int64_t n, bool durable, bool hashed) {
    hashes_.EndPart(
        "u", n, durable, hashed, kParts, [&](int64_t k) { return stored_.count(k) > 0; },
        [&](int64_t k, Sha256* hash) {
          ++reads_;
          hash->Update(stored_.at(k));
          return Status::Ok();
        });
  }
  std::string HexOf(int64_t parts) {
    std::string all;
    for (int64_t n = 0; n < parts; ++n) all += stored_.at(n);
    return Sha256::Hex(all);
  }

  UploadHashes hashes_;
  std::map<int64_t, std::string> stored_;
  int reads_ = 0;
};

TEST_F(UploadHashesTest, PartsInOrderAreHashedFromTheRequestsBytes) {
  for (int64_t n = 0; n < kParts; ++n) Put(n, "p" + std::to_string(n));
  EXPECT_EQ(reads_, 0);
  auto prefix = hashes_.Take("u");
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->parts, kParts);
  EXPECT_EQ(prefix->hash->FinishHex(), HexOf(kParts));
  EXPECT_EQ(hashes_.size(), 0u);  // taken
}

TEST_F(UploadHashesTest, PartsThatCameEarlyAreReadBackWhenTheirTurnComes) {
  Put(2, "p2");
  Put(1, "p1");
  EXPECT_EQ(reads_, 0);  // part 0 is not there: nothing can be hashed yet
  Put(0, "p0");
  EXPECT_EQ(reads_, 2);  // parts 1 and 2, after part 0
  auto prefix = hashes_.Take("u");
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->parts, 3);  // part 3 never came: the store reads it at completion
  EXPECT_EQ(prefix->hash->FinishHex(), HexOf(3));
}

TEST_F(UploadHashesTest, APartSentAgainAfterItWasHashedSpoilsTheState) {
  Put(0, "p0");
  Put(1, "p1");
  Put(1, "other bytes");
  EXPECT_FALSE(hashes_.Take("u").has_value());  // the store reads everything
  EXPECT_EQ(hashes_.size(), 0u);
}

TEST_F(UploadHashesTest, APartBeingWrittenIsNotReadAndBlocksTheTake) {
  Put(0, "p0");
  Begin(1);  // a PUT of part 1 is writing it
  stored_[1] = "half";
  Put(2, "p2");  // not next: nothing is read
  EXPECT_EQ(reads_, 0);
  EXPECT_FALSE(hashes_.Take("u").has_value());  // completion while a part is being written
}

TEST_F(UploadHashesTest, TwoPutsOfOnePartAtOnceSpoilTheState) {
  Sha256* first = Begin(0);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(Begin(0), nullptr);  // the second one may not feed the hash
  stored_[0] = "p0";
  first->Update("p0");
  End(0, true, /*hashed=*/true);
  End(0, true, /*hashed=*/false);
  EXPECT_FALSE(hashes_.Take("u").has_value());
  EXPECT_EQ(hashes_.size(), 0u);
}

TEST_F(UploadHashesTest, AFailedWriteThatFedTheHashSpoilsItAndForgetDropsTheState) {
  Put(0, "p0");
  Sha256* hash = Begin(1);
  ASSERT_NE(hash, nullptr);
  hash->Update("half of p1");  // the body was cut after these bytes
  End(1, /*durable=*/false, /*hashed=*/true);
  // The state with the cut bytes in its hash is gone: sent again whole, the parts are hashed
  // afresh, part 0 read back from the store.
  Put(1, "p1");
  Put(2, "p2");
  Put(3, "p3");
  EXPECT_EQ(reads_, 2);  // parts 0 and 1, read back once part 1 was durable
  auto prefix = hashes_.Take("u");
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->parts, kParts);
  EXPECT_EQ(prefix->hash->FinishHex(), HexOf(kParts));
  Put(0, "p0");
  EXPECT_EQ(hashes_.size(), 1u);
  hashes_.Forget("u");
  EXPECT_EQ(hashes_.size(), 0u);
}

TEST_F(UploadHashesTest, PartsInFlightTogetherAreFedOrReadBackInOrder) {
  // Two PUTs at once, as the uploaders send them: part 0 feeds the hash as it is written, part 1
  // (begun meanwhile, not next) is read back once part 0 is in.
  Sha256* zero = Begin(0);
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(Begin(1), nullptr);
  stored_[1] = "p1";
  End(1, true, false);  // ends first: part 0 is still being written
  EXPECT_EQ(reads_, 0);
  stored_[0] = "p0";
  zero->Update("p0");
  End(0, true, true);
  EXPECT_EQ(reads_, 1);  // part 1, after part 0
  Put(2, "p2");          // next again: fed, not read
  Put(3, "p3");
  EXPECT_EQ(reads_, 1);
  auto prefix = hashes_.Take("u");
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->parts, kParts);
  EXPECT_EQ(prefix->hash->FinishHex(), HexOf(kParts));
}

TEST_F(UploadHashesTest, NoPartBeginsWhileTheUploadIsCompletedNorACompletionWhileOneIsWritten) {
  Sha256* zero = Begin(0);
  EXPECT_EQ(hashes_.BeginCompletion("u").code(), StatusCode::kFailedPrecondition);  // writing
  stored_[0] = "p0";
  zero->Update("p0");
  End(0, true, true);
  ASSERT_TRUE(hashes_.BeginCompletion("u").ok());
  EXPECT_EQ(hashes_.BeginCompletion("u").code(), StatusCode::kFailedPrecondition);  // one at once
  Sha256* hash = nullptr;
  EXPECT_EQ(hashes_.BeginPart("u", 1, &hash).code(), StatusCode::kUnavailable);
  EXPECT_EQ(hash, nullptr);
  hashes_.EndCompletion("u");
  Put(1, "p1");  // after it (a completion that failed): parts come again
  EXPECT_EQ(reads_, 0);
}

}  // namespace
}  // namespace cohort::blob
