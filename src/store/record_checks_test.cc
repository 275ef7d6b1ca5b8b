#include "store/record_checks.h"

#include <gtest/gtest.h>

#include "core/limits.h"

namespace cohort::store {
namespace {

MediaPoint Image() {
  MediaPoint m;
  m.key = "samples";
  m.step = 3;
  m.type = "image";
  m.sha256 = std::string(62, 'a') + "0f";
  m.size = 10;
  m.mime = "image/png";
  return m;
}

void ExpectRefused(const MediaPoint& m, const std::string& words) {
  Status s = CheckMediaPoint("media[2]", m);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  EXPECT_EQ(s.message().rfind("media[2]", 0), 0u) << s.message();
}

TEST(CheckMediaPointTest, ARowWithItsDigestIsChecked) {
  EXPECT_TRUE(CheckMediaPoint("media[2]", Image()).ok());
  MediaPoint m = Image();
  m.type = "gif";
  ExpectRefused(m, ".type: 'gif' is not image, audio, video, html or table");
  m = Image();
  m.index = -1;
  ExpectRefused(m, ".index: must be 0 to 2^32-1");
  m = Image();
  m.sha256 = "";
  ExpectRefused(m, "(key 'samples'): sha256");
  m = Image();
  m.mime = "image/png; charset=x";
  ExpectRefused(m, "mime:");
}

TEST(CheckMediaPointTest, ARowNamedByPathHasItsDigestAndSizeLater) {
  MediaPoint m = Image();
  m.sha256 = "";
  m.size = 0;
  m.path = "media/images/samples_3_0.png";
  EXPECT_TRUE(CheckMediaPoint("media[2]", m).ok());
  m.size = 5;  // the size comes with the upload, as the digest does
  ExpectRefused(m, ".size: unknown before the upload");
  m.size = 0;
  m.path = std::string(limits::kMaxMediaPathBytes + 1, 'p');
  ExpectRefused(m, ".path: 1 to 1024 bytes without NUL");
  m.path = std::string("media/images/a\0b.png", 21);
  ExpectRefused(m, ".path:");
  m.path = "media/images/ok.png";
  m.step = -1;  // every other field is checked as any row's
  ExpectRefused(m, "step -1 is negative");
}

TEST(CheckHistogramPointTest, NegativeStepsAndBadHistogramsAreRefused) {
  HistogramPoint h;
  h.key = "grad/w";
  h.step = -2;
  Status s = CheckHistogramPoint("histograms[0]", h);
  EXPECT_EQ(s.message(), "histograms[0].step: must be >= 0");
  h.step = 0;  // no bins
  s = CheckHistogramPoint("histograms[0]", h);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("histograms[0] (key 'grad/w'): "), std::string::npos) << s.message();
}

}  // namespace
}  // namespace cohort::store
