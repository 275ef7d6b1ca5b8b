#include "series/chunk.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/coding.h"
#include "core/crc32c.h"
#include "series/series_test_util.h"

namespace cohort::series {
namespace {

using testing::Bits;
using testing::BitsOf;
using testing::DiffPoints;
using testing::kMax;
using testing::kMin;
using testing::RandomLength;
using testing::RandomPoints;
using testing::Rng;

std::string EncodeAll(const std::vector<Point>& pts) {
  ChunkEncoder e;
  for (const Point& p : pts) e.Append(p.step, p.time_ms, p.value);
  return e.Encode();
}

ValueMode ModeOf(const std::string& chunk) { return ValueMode(uint8_t(chunk[1])); }

// Replaces the trailing CRC so that a damaged body reaches the structural checks.
std::string WithFixedCrc(std::string chunk) {
  if (chunk.size() < 4) return chunk;
  chunk.resize(chunk.size() - 4);
  coding::PutFixed32(&chunk, crc32c::Value(chunk));
  return chunk;
}

// Chunks of every value mode, for the corruption tests.
std::vector<std::string> SampleChunks() {
  std::vector<std::string> chunks;
  std::vector<Point> pts;
  for (int i = 0; i < 200; ++i) pts.push_back({i, 1700000000000 + 100 * i + i % 5, 0});
  for (auto& p : pts) p.value = double(p.step % 17);  // integer
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.value = double(float(1.0 / (1 + p.step)));  // float32
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.value = 1.0 / (1 + p.step);  // double
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.value = p.step % 2 ? 1.0 / 3 : 0.7;  // alternating doubles: XOR wins
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.value = double(float(p.step % 2 ? 0.1 : 0.7));
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.value = double(p.step % 1000) / 1000;  // decimals: scaled
  pts[3].value = std::numeric_limits<double>::quiet_NaN();     // with exceptions
  pts[150].value = -0.0;
  chunks.push_back(EncodeAll(pts));
  for (auto& p : pts) p.step = p.time_ms;  // steps are the times
  chunks.push_back(EncodeAll(pts));
  chunks.push_back(EncodeAll({}));
  chunks.push_back(EncodeAll({{kMin, kMax, -0.0}}));
  return chunks;
}

TEST(ChunkTest, EmptyChunkRoundTrips) {
  auto pts = DecodeChunk(EncodeAll({}));
  ASSERT_TRUE(pts.ok()) << pts.status().ToString();
  EXPECT_TRUE(pts->empty());
}

TEST(ChunkTest, RandomSequencesRoundTripBitForBit) {
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    Rng rng(seed);
    const auto want = RandomPoints(rng, RandomLength(rng, kMaxChunkPoints));
    const std::string enc = EncodeAll(want);
    auto got = DecodeChunk(enc);
    ASSERT_TRUE(got.ok()) << "seed " << seed << ": " << got.status().ToString();
    ASSERT_EQ(DiffPoints(want, *got), "") << "seed " << seed;
  }
}

TEST(ChunkTest, SpecialDoublesRoundTripInEveryPosition) {
  const auto specials = testing::SpecialDoubles();
  // Each special alone, after a float32 run, after an integer run and among the others.
  std::vector<std::vector<Point>> cases;
  for (double v : specials) {
    cases.push_back({{0, 0, v}});
    cases.push_back({{0, 0, 1.5}, {1, 1, 2.5}, {2, 2, v}, {3, 3, 0.25}});
    cases.push_back({{0, 0, 3}, {1, 1, 4}, {2, 2, v}, {3, 3, 5}});
  }
  std::vector<Point> all;
  for (size_t i = 0; i < specials.size(); ++i) all.push_back({int64_t(i), 0, specials[i]});
  cases.push_back(all);
  for (const auto& want : cases) {
    auto got = DecodeChunk(EncodeAll(want));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(DiffPoints(want, *got), "") << "first value bits " << BitsOf(want[0].value);
  }
}

TEST(ChunkTest, Int64ExtremeStepsAndTimesRoundTrip) {
  const int64_t extremes[] = {kMin, kMax, 0, -1, 1, kMin + 1, kMax - 1};
  std::vector<Point> want;
  for (int64_t a : extremes) {
    for (int64_t b : extremes) want.push_back({a, b, 1.0});
  }
  for (int64_t a : extremes) want.push_back({a, a, 2.0});  // equal neighbours too
  auto got = DecodeChunk(EncodeAll(want));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(DiffPoints(want, *got), "");
}

TEST(ChunkTest, IntegerValuesUseIntegerMode) {
  std::vector<Point> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i, i, double(i * 3 - 50)});
  EXPECT_EQ(ModeOf(EncodeAll(pts)), ValueMode::kInteger);
}

TEST(ChunkTest, Float32ValuesUseAFloat32Mode) {
  std::vector<Point> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i, i, double(float(std::sin(i * 0.1)))});
  const ValueMode m = ModeOf(EncodeAll(pts));
  EXPECT_TRUE(m == ValueMode::kXor32 || m == ValueMode::kFloat32Delta) << int(m);
}

TEST(ChunkTest, Float32DenormalsUseAFloat32Mode) {
  std::vector<Point> pts;
  for (int i = 0; i < 50; ++i) {
    pts.push_back({i, i, double(std::numeric_limits<float>::denorm_min()) * (i + 1)});
  }
  const std::string enc = EncodeAll(pts);
  const ValueMode m = ModeOf(enc);
  EXPECT_TRUE(m == ValueMode::kXor32 || m == ValueMode::kFloat32Delta) << int(m);
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
}

TEST(ChunkTest, OneDoubleAmongIntegersIsAnExceptionOfTheScaledMode) {
  std::vector<Point> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i, i, double(i)});
  pts.push_back({100, 100, std::acos(-1.0)});
  const std::string enc = EncodeAll(pts);
  EXPECT_EQ(ModeOf(enc), ValueMode::kScaled);
  EXPECT_LT(enc.size(), 50u);  // the integers in a few bytes, pi in 8
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
}

TEST(ChunkTest, DoublesThatAreNotRatiosUseA64BitMode) {
  std::vector<Point> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i, i, std::sqrt(2.0 + i)});
  const std::string enc = EncodeAll(pts);
  const ValueMode m = ModeOf(enc);
  EXPECT_TRUE(m == ValueMode::kXor64 || m == ValueMode::kFloat64Delta) << int(m);
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
}

TEST(ChunkTest, ShortDecimalsUseTheScaledModeAtAFewBitsAPoint) {
  Rng rng(5);
  std::vector<Point> pts;
  for (int i = 0; i < kMaxChunkPoints; ++i) {  // an accuracy rounded to 3 places
    pts.push_back({i, 1700000000000 + 100 * i, double(900 + int(rng() % 64)) / 1000});
  }
  const std::string enc = EncodeAll(pts);
  EXPECT_EQ(ModeOf(enc), ValueMode::kScaled);
  EXPECT_LT(enc.size(), size_t(kMaxChunkPoints) * 6 / 8 + 40);  // 6 bits a value (64 levels)
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
}

TEST(ChunkTest, RatiosOfACountUseTheScaledMode) {
  Rng rng(6);
  std::vector<Point> pts;
  for (int i = 0; i < 300; ++i) {  // 100. * correct / 360, as the PyTorch examples compute it
    pts.push_back({i, i, 100.0 * double(300 + rng() % 60) / 360});
  }
  const std::string enc = EncodeAll(pts);
  EXPECT_EQ(ModeOf(enc), ValueMode::kScaled);
  EXPECT_LT(enc.size(), 300u * 10 / 8);  // 10 bits a value; as doubles, 50-64
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
}

TEST(ChunkTest, ScaledModeExceptionsKeepEveryBit) {
  const auto specials = testing::SpecialDoubles();
  Rng rng(8);
  for (int round = 0; round < 200; ++round) {
    std::vector<Point> pts;
    const int n = 1 + int(rng() % kMaxChunkPoints);
    for (int i = 0; i < n; ++i) pts.push_back({i, i, double(int(rng() % 5000)) / 100});
    // Exceptions anywhere, the first and last positions included, up to a fifth of the chunk.
    for (int e = int(rng() % (n / 5 + 1)); e > 0; --e) {
      pts[rng() % 2   ? 0
          : rng() % 3 ? size_t(rng() % n)
                      : size_t(n - 1)]
          .value = specials[rng() % specials.size()];
    }
    const std::string enc = EncodeAll(pts);
    auto got = DecodeChunk(enc);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(DiffPoints(pts, *got), "") << "round " << round << " mode " << int(ModeOf(enc));
  }
}

TEST(ChunkTest, ScaledModeIsTheSameInEveryRoundingMode) {
  std::vector<Point> pts;
  for (int i = 0; i < 500; ++i) pts.push_back({i, i, double(i * 7 % 1000) / 1000 + 0.001});
  const std::string nearest = EncodeAll(pts);
  ASSERT_EQ(ModeOf(nearest), ValueMode::kScaled);
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    const std::string enc = EncodeAll(pts);
    auto got = DecodeChunk(nearest);
    EXPECT_EQ(std::fegetround(), mode);  // restored
    std::fesetround(FE_TONEAREST);
    EXPECT_EQ(enc, nearest) << "rounding mode " << mode;
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(DiffPoints(pts, *got), "") << "rounding mode " << mode;
  }
}

TEST(ChunkTest, NegativeZeroIsNotCodedAsAnInteger) {
  const std::vector<Point> pts = {{0, 0, 1.0}, {1, 1, -0.0}, {2, 2, 2.0}};
  const std::string enc = EncodeAll(pts);
  EXPECT_NE(ModeOf(enc), ValueMode::kInteger);
  auto got = DecodeChunk(enc);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(std::signbit((*got)[1].value));
}

TEST(ChunkTest, RegularStepsTimesAndConstantValuesCostAlmostNothing) {
  std::vector<Point> pts;
  for (int i = 0; i < kMaxChunkPoints; ++i) pts.push_back({i, 1700000000000 + 100 * i, 7.0});
  EXPECT_LT(EncodeAll(pts).size(), 40u);
}

TEST(ChunkTest, JitteredTimesCostUnderOneBytePerPoint) {
  Rng rng(7);
  std::vector<Point> pts;
  for (int i = 0; i < kMaxChunkPoints; ++i) {
    pts.push_back({i, 1700000000000 + 100 * i + int64_t(rng() % 5), 7.0});
  }
  EXPECT_LT(EncodeAll(pts).size(), size_t(kMaxChunkPoints));
}

TEST(ChunkTest, StepsEqualToTimesAreNotStoredTwice) {
  Rng rng(9);
  std::vector<Point> pts, shifted;
  for (int i = 0; i < kMaxChunkPoints; ++i) {  // system metrics: the step is the sample time
    const int64_t t = 1700000000000 + 1000 * i + int64_t(rng() % 9);
    pts.push_back({t, t, double(i % 7)});
    shifted.push_back({t + 1, t, double(i % 7)});
  }
  const std::string same = EncodeAll(pts), apart = EncodeAll(shifted);
  EXPECT_LT(same.size() + 300, apart.size());  // the jittered stream once, not twice
  auto got = DecodeChunk(same);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(pts, *got), "");
  got = DecodeChunk(apart);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(DiffPoints(shifted, *got), "");
}

TEST(ChunkTest, EncodeIsDeterministic) {
  Rng rng(99);
  const auto pts = RandomPoints(rng, 1000);
  EXPECT_EQ(EncodeAll(pts), EncodeAll(pts));
}

TEST(ChunkTest, EverySingleByteChangeIsDetected) {
  for (const std::string& chunk : SampleChunks()) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      for (int mask : {0x01, 0x80, 0xFF, 0x5A}) {
        std::string bad = chunk;
        bad[i] = char(bad[i] ^ mask);
        auto got = DecodeChunk(bad);
        ASSERT_FALSE(got.ok()) << "byte " << i << " of " << chunk.size() << " mask " << mask;
        ASSERT_EQ(got.status().code(), StatusCode::kCorruption);
      }
    }
  }
}

TEST(ChunkTest, EveryTruncationIsDetected) {
  for (const std::string& chunk : SampleChunks()) {
    for (size_t len = 0; len < chunk.size(); ++len) {
      auto got = DecodeChunk(std::string_view(chunk).substr(0, len));
      ASSERT_FALSE(got.ok()) << "length " << len << " of " << chunk.size();
      ASSERT_EQ(got.status().code(), StatusCode::kCorruption);
    }
  }
}

TEST(ChunkTest, AppendedBytesAreDetected) {
  for (const std::string& chunk : SampleChunks()) {
    EXPECT_FALSE(DecodeChunk(chunk + '\0').ok());
    EXPECT_FALSE(DecodeChunk(WithFixedCrc(chunk.substr(0, chunk.size() - 4) + '\0' + "1234")).ok())
        << "trailing zero byte with a valid checksum";
  }
}

TEST(ChunkTest, ErrorsSayWhatIsWrong) {
  const std::string chunk = EncodeAll({{1, 2, 3.0}});
  std::string bad_crc = chunk;
  bad_crc.back() ^= 1;
  EXPECT_NE(DecodeChunk(bad_crc).status().message().find("checksum"), std::string::npos);
  std::string bad_version = chunk;
  bad_version[0] = char(kChunkMagic | (kChunkVersion + 1));
  EXPECT_NE(DecodeChunk(WithFixedCrc(bad_version)).status().message().find("version 3"),
            std::string::npos);
  bad_version[0] = char(kChunkMagic | 1);  // the pre-release format 1, never shipped
  EXPECT_NE(DecodeChunk(WithFixedCrc(bad_version)).status().message().find("version 1"),
            std::string::npos);
  std::string bad_magic = chunk;
  bad_magic[0] = 0x01;
  EXPECT_NE(DecodeChunk(bad_magic).status().message().find("magic"), std::string::npos);
  std::string bad_mode = chunk;
  bad_mode[1] = 9;
  EXPECT_NE(DecodeChunk(WithFixedCrc(bad_mode)).status().message().find("mode"), std::string::npos);
}

TEST(ChunkTest, DamagedBodiesWithValidChecksumsNeverCrash) {
  // Mutations behind a recomputed CRC reach every structural check; run under ASan/UBSan.
  const auto chunks = SampleChunks();
  Rng rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string bad = chunks[rng() % chunks.size()];
    bad.resize(bad.size() - 4);
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !bad.empty(); ++e) {
      switch (rng() % 4) {
        case 0:
          bad[rng() % bad.size()] = char(rng());
          break;
        case 1:
          bad.resize(rng() % bad.size());
          break;
        case 2:
          bad.insert(bad.begin() + long(rng() % bad.size()), char(rng()));
          break;
        default:
          bad[rng() % bad.size()] ^= char(1 << (rng() % 8));
          break;
      }
    }
    if (rng() % 8 == 0 && bad.size() > 1) bad[1] = char(rng() % 5);  // another valid mode
    coding::PutFixed32(&bad, crc32c::Value(bad));
    auto got = DecodeChunk(bad);
    if (got.ok()) {
      ++accepted;
      ASSERT_LE(got->size(), size_t(kMaxChunkPoints));
    } else {
      ASSERT_EQ(got.status().code(), StatusCode::kCorruption);
    }
  }
  EXPECT_LT(accepted, 30000);
}

TEST(ChunkTest, RandomBytesAreRejectedWithoutCrashing) {
  Rng rng(777);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = char(rng());
    if (!bytes.empty() && rng() % 2) bytes[0] = char(kChunkMagic | kChunkVersion);
    EXPECT_FALSE(DecodeChunk(bytes).ok()) << "iteration " << iter;  // the CRC is wrong
  }
}

TEST(ChunkIteratorTest, StepsThroughEveryPointInArrivalOrderAcrossReusedChunks) {
  ChunkIterator it;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    // Lengths go up and down, so that a reused iterator meets shorter chunks after longer ones.
    const auto pts = RandomPoints(rng, RandomLength(rng, kMaxChunkPoints));
    ASSERT_TRUE(it.Reset(EncodeAll(pts)).ok()) << "seed " << seed;
    ASSERT_EQ(it.size(), pts.size());
    std::vector<Point> stepped;
    while (it.Next()) {
      ASSERT_EQ(it.index(), stepped.size());
      stepped.push_back(it.At());
    }
    EXPECT_FALSE(it.Next()) << "an exhausted iterator stays exhausted";
    ASSERT_EQ(DiffPoints(pts, stepped), "") << "seed " << seed;
    ASSERT_EQ(DiffPoints(pts, it.points()), "") << "seed " << seed;
  }
}

TEST(ChunkIteratorTest, EmptyChunkHasNoPoint) {
  ChunkIterator it;
  ASSERT_TRUE(it.Reset(EncodeAll({})).ok());
  EXPECT_EQ(it.size(), 0u);
  EXPECT_FALSE(it.Next());
}

TEST(ChunkIteratorTest, ADamagedChunkYieldsNoPointEvenAfterAGoodOne) {
  ChunkIterator it;
  for (const std::string& chunk : SampleChunks()) {
    if (chunk.size() < 8) continue;
    ASSERT_TRUE(it.Reset(chunk).ok());
    std::string bad = chunk;
    bad[bad.size() / 2] ^= 0x10;
    const Status s = it.Reset(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(it.size(), 0u);
    EXPECT_FALSE(it.Next()) << "no point of a damaged chunk, not even a prefix";
  }
}

TEST(ChunkIteratorTest, APayloadDamagedBehindAValidChecksumYieldsNoPoint) {
  ChunkIterator it;
  int refused = 0;
  for (const std::string& chunk : SampleChunks()) {
    if (chunk.size() < 12) continue;
    // The last payload byte dropped, the checksum recomputed: only the payload checks see it.
    const std::string bad =
        WithFixedCrc(chunk.substr(0, chunk.size() - 5) + chunk.substr(chunk.size() - 4));
    ASSERT_TRUE(it.Reset(chunk).ok());
    if (it.Reset(bad).ok()) continue;
    ++refused;
    EXPECT_EQ(it.size(), 0u);
    EXPECT_FALSE(it.Next());
  }
  EXPECT_GE(refused, 3);
}

TEST(ChunkIteratorTest, ResetStartsOverOnTheSameChunk) {
  ChunkIterator it;
  const std::string chunk = EncodeAll({{1, 10, 1.5}, {2, 20, 2.5}, {3, 30, 3.5}});
  ASSERT_TRUE(it.Reset(chunk).ok());
  ASSERT_TRUE(it.Next());
  ASSERT_TRUE(it.Next());
  EXPECT_EQ(it.At().step, 2);
  ASSERT_TRUE(it.Reset(chunk).ok());
  ASSERT_TRUE(it.Next());
  EXPECT_EQ(it.At().step, 1);
  EXPECT_EQ(it.At().time_ms, 10);
  EXPECT_EQ(it.At().value, 1.5);
}

TEST(ChunkSummaryTest, FirstIsEarliestLowestStepLastIsLatestHighestStep) {
  ChunkSummary s;
  s.Add(5, 0, 1.0);
  s.Add(3, 0, 2.0);
  s.Add(3, 0, 3.0);  // equal lowest step, later: not first
  s.Add(9, 0, 4.0);
  s.Add(9, 0, 5.0);  // equal highest step, later: last
  EXPECT_EQ(s.first, 2.0);
  EXPECT_EQ(s.last, 5.0);
  EXPECT_EQ(s.min_step, 3);
  EXPECT_EQ(s.max_step, 9);
}

TEST(ChunkSummaryTest, FirstPointAtInt64MaxIsFirstAndLast) {
  ChunkSummary s;
  s.Add(kMax, kMin, 7.0);
  EXPECT_EQ(s.first, 7.0);
  EXPECT_EQ(s.last, 7.0);
  EXPECT_EQ(s.min_step, kMax);
  EXPECT_EQ(s.max_time, kMin);
}

TEST(ChunkSummaryTest, NanCountsButStaysOutOfMinMaxSum) {
  ChunkSummary s;
  s.Add(0, 0, std::nan(""));
  EXPECT_EQ(s.min, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.max, -std::numeric_limits<double>::infinity());
  s.Add(1, 0, 2.0);
  s.Add(2, 0, -1.0);
  s.Add(3, 0, std::nan(""));
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.nan_count, 2);
  EXPECT_EQ(s.min, -1.0);
  EXPECT_EQ(s.max, 2.0);
  EXPECT_EQ(s.sum, 1.0);
  EXPECT_TRUE(std::isnan(s.first));
  EXPECT_TRUE(std::isnan(s.last));
}

TEST(ChunkSummaryTest, SignedZerosOrderTheSameWayWhateverTheArrival) {
  ChunkSummary a, b;
  a.Add(0, 0, 0.0);
  a.Add(1, 0, -0.0);
  b.Add(0, 0, -0.0);
  b.Add(1, 0, 0.0);
  EXPECT_TRUE(std::signbit(a.min) && std::signbit(b.min));
  EXPECT_TRUE(!std::signbit(a.max) && !std::signbit(b.max));
}

TEST(ChunkSummaryTest, MergeEqualsAddingEveryPoint) {
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    Rng rng(seed);
    auto pts = RandomPoints(rng, 1 + rng() % 200);
    for (auto& p : pts) {  // small integers, signed zeros and NaN: sums are exact
      const uint64_t r = rng() % 20;
      p.value = r == 0 ? std::nan("") : r == 1 ? -0.0 : double(int64_t(rng() % 2000) - 1000);
    }
    ChunkSummary whole, merged, part;
    const size_t cut = rng() % pts.size();
    for (size_t i = 0; i < pts.size(); ++i) {
      whole.Add(pts[i].step, pts[i].time_ms, pts[i].value);
      part.Add(pts[i].step, pts[i].time_ms, pts[i].value);
      if (i == cut || i + 1 == pts.size()) {
        merged.Merge(part);
        part = ChunkSummary();
      }
    }
    ASSERT_EQ(merged.count, whole.count) << "seed " << seed;
    ASSERT_EQ(merged.nan_count, whole.nan_count) << "seed " << seed;
    ASSERT_EQ(merged.min_step, whole.min_step) << "seed " << seed;
    ASSERT_EQ(merged.max_step, whole.max_step) << "seed " << seed;
    ASSERT_EQ(merged.min_time, whole.min_time) << "seed " << seed;
    ASSERT_EQ(merged.max_time, whole.max_time) << "seed " << seed;
    ASSERT_EQ(BitsOf(merged.min), BitsOf(whole.min)) << "seed " << seed;
    ASSERT_EQ(BitsOf(merged.max), BitsOf(whole.max)) << "seed " << seed;
    ASSERT_EQ(BitsOf(merged.sum), BitsOf(whole.sum)) << "seed " << seed;
    ASSERT_EQ(BitsOf(merged.first), BitsOf(whole.first)) << "seed " << seed;
    ASSERT_EQ(BitsOf(merged.last), BitsOf(whole.last)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cohort::series
