// LogBuffer with media rows (cohort.h Run::ClaimMediaKey / LogMedia): rows at the step given,
// indexes 0..n-1, keys in the batch's key table, one type per key (scalars, histograms and each
// media type), invalid rows refused whole, and more rows than one batch holds taken in turns.
#include <gtest/gtest.h>

#include "client/log_buffer.h"

namespace cohort::client {
namespace {

batch::MediaRow Row(char digit, std::string caption = "") {
  batch::MediaRow r;
  r.sha256 = std::string(64, digit);
  r.size = 10;
  r.mime = "image/png";
  r.width = 3;
  r.height = 2;
  r.caption = std::move(caption);
  return r;
}

TEST(LogBufferMediaTest, RowsTakeTheirStepAndIndexAndJoinTheKeyTable) {
  LogBuffer buf;
  bool flush = false;
  buf.Log({{"loss", 0.5}}, std::nullopt, true);  // true: a flush is due (not here)
  ASSERT_TRUE(buf.ClaimMedia("samples", batch::MediaType::kImage).ok());
  ASSERT_TRUE(buf.LogMedia("samples", batch::MediaType::kImage, 0,
                           {Row('a', "first"), Row('b')}, &flush)
                  .ok());
  EXPECT_FALSE(flush);
  EXPECT_FALSE(buf.empty());
  batch::Batch b;
  ASSERT_TRUE(buf.Take(&b));
  ASSERT_EQ(b.media.size(), 2u);
  EXPECT_EQ(b.keys[b.media[0].key], "samples");
  EXPECT_EQ(b.media[0].step, 0);
  EXPECT_EQ(b.media[0].index, 0u);
  EXPECT_EQ(b.media[0].caption, "first");
  EXPECT_EQ(b.media[1].index, 1u);
  EXPECT_EQ(b.media[1].type, batch::MediaType::kImage);
  EXPECT_EQ(b.media[1].sha256, std::string(64, 'b'));
  std::string encoded;
  batch::EncodeStats stats = batch::Encode(b, &encoded);
  EXPECT_EQ(stats.media, 2);
  EXPECT_EQ(stats.dropped_media, 0);
  EXPECT_TRUE(buf.empty());
  // Media alone make a batch.
  ASSERT_TRUE(buf.LogMedia("samples", batch::MediaType::kImage, 4, {Row('c')}, &flush).ok());
  ASSERT_TRUE(buf.Take(&b));
  EXPECT_TRUE(b.history.empty());
  ASSERT_EQ(b.media.size(), 1u);
  EXPECT_EQ(b.keys.size(), 1u);
  EXPECT_EQ(b.media[0].step, 4);
}

TEST(LogBufferMediaTest, AKeyHasOneType) {
  LogBuffer buf;
  bool flush = false;
  buf.Log({{"loss", 0.5}}, std::nullopt, true);  // true: a flush is due (not here)
  Histogram h;
  h.lo = 0;
  h.hi = 1;
  h.counts = {1};
  const Histograms grad = {{"grad", h}};
  ASSERT_TRUE(buf.Log({}, grad, std::nullopt, true, &flush).ok());
  Status s = buf.ClaimMedia("loss", batch::MediaType::kImage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'loss' was logged as a scalar and cannot be logged as an "
                             "image"),
            std::string::npos)
      << s.ToString();
  s = buf.ClaimMedia("grad", batch::MediaType::kTable);
  EXPECT_NE(s.message().find("as a histogram and cannot be logged as a table"), std::string::npos)
      << s.ToString();
  ASSERT_TRUE(buf.ClaimMedia("clip", batch::MediaType::kAudio).ok());
  s = buf.LogMedia("clip", batch::MediaType::kVideo, 1, {Row('a')}, &flush);
  EXPECT_NE(s.message().find("as audio and cannot be logged as a video"), std::string::npos)
      << s.ToString();
  // A scalar or a histogram under a media key: refused at the call, nothing of it logged.
  s = buf.Log({{"clip", 1}, {"x", 2}}, {}, std::nullopt, true, &flush);
  EXPECT_NE(s.message().find("key 'clip' was logged as audio and cannot be logged as a scalar"),
            std::string::npos)
      << s.ToString();
  const Histograms clip = {{"clip", h}};
  s = buf.Log({}, clip, std::nullopt, true, &flush);
  EXPECT_NE(s.message().find("as audio and cannot be logged as a histogram"), std::string::npos)
      << s.ToString();
  // The fast path (scalars only, keys known) drops a value under a media key and counts it.
  const int64_t dropped = buf.dropped();
  buf.Log({{"clip", 1}}, std::nullopt, true);
  EXPECT_EQ(buf.dropped(), dropped + 1);
  EXPECT_EQ(buf.ClaimMedia("", batch::MediaType::kImage).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(buf.ClaimMedia("system/x", batch::MediaType::kImage).code(),
            StatusCode::kInvalidArgument);
}

TEST(LogBufferMediaTest, AnInvalidRowRefusesTheSet) {
  LogBuffer buf;
  bool flush = false;
  batch::MediaRow bad = Row('a');
  bad.sha256 = "nope";
  Status s = buf.LogMedia("img", batch::MediaType::kImage, 0, {Row('b'), bad}, &flush);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("media 'img'[1]: sha256"), std::string::npos) << s.ToString();
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(buf.LogMedia("img", batch::MediaType::kImage, -1, {Row('b')}, &flush).code(),
            StatusCode::kInvalidArgument);
}

TEST(LogBufferMediaTest, ManyRowsAreTakenInBatchesAndAFlushIsAskedFor) {
  LogBuffer buf;
  bool flush = false;
  const size_t per_set = 512;
  std::vector<batch::MediaRow> set(per_set, Row('d'));
  size_t logged = 0;
  while (!flush) {
    ASSERT_TRUE(buf.LogMedia("img", batch::MediaType::kImage, int64_t(logged), set, &flush).ok());
    logged += per_set;
  }
  EXPECT_EQ(logged, limits::kClientMaxBatchMedia / 4);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(buf.LogMedia("img", batch::MediaType::kImage, 100 + i, set, &flush).ok());
  }
  logged += 8 * per_set;
  size_t taken = 0;
  batch::Batch b;
  while (buf.Take(&b)) {
    EXPECT_LE(b.media.size(), limits::kClientMaxBatchMedia);
    EXPECT_EQ(b.keys.size(), 1u);
    taken += b.media.size();
  }
  EXPECT_EQ(taken, logged);
}

}  // namespace
}  // namespace cohort::client
