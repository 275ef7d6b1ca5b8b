#include "series/residual.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cohort::series::internal {
namespace {

using Rng = std::mt19937_64;

// x[0..n) whose residuals of order `order` (base 0) need exactly one of `widths` bits each.
std::vector<int64_t> WithResidualWidths(Rng& rng, size_t n, const std::vector<int>& widths,
                                        int order = 1) {
  std::vector<int64_t> x(n);
  uint64_t v = rng(), d = rng();
  for (size_t i = 0; i < n; ++i) {
    const int w = widths[rng() % widths.size()];
    uint64_t z = 0;
    if (w > 0) {
      const uint64_t top = uint64_t{1} << (w - 1);
      z = top | (w > 1 ? rng() & (top - 1) : 0);
    }
    if (order == 1) {
      v += uint64_t(coding::UnZigZag(z));
    } else {
      d += uint64_t(coding::UnZigZag(z));
      v += d;
    }
    x[i] = int64_t(v);
  }
  return x;
}

// Encodes x with code `c` (its selector and value bit counts filled in here) into a buffer that
// ends exactly where the payload does (so that ASan sees any read past it) and decodes it back
// into `got`. True when the decoder accepted the payload.
bool RoundTripWith(StreamCode c, const std::vector<int64_t>& x, std::vector<int64_t>* got) {
  c.selector_bits = c.value_bits = 0;
  for (size_t i = size_t(c.order); i < x.size(); ++i) {
    uint64_t z = uint64_t(x[i]) - uint64_t(c.base);  // order 0: unsigned, no zigzag
    if (c.order > 0) {
      uint64_t d = uint64_t(x[i]) - uint64_t(x[i - 1]);
      if (c.order == 2) d -= uint64_t(x[i - 1]) - uint64_t(x[i - 2]);
      z = coding::ZigZag(int64_t(d - uint64_t(c.base)));
    }
    int cls = 0;
    while (cls < c.k - 1 && c.widths[cls] < std::bit_width(z)) ++cls;
    c.selector_bits += uint64_t(c.selector_width());
    c.value_bits += c.widths[cls];
  }
  std::string header;
  WriteStreamHeader(c, x.data(), x.size(), &header);
  std::vector<char> scratch(c.payload_bytes() + 8);
  WriteStreamPayload(c, x.data(), x.size(), scratch.data());
  auto payload = std::make_unique<char[]>(c.payload_bytes() + 1);
  std::memcpy(payload.get(), scratch.data(), c.payload_bytes());
  StreamHeader h;
  std::string_view in = header;
  EXPECT_TRUE(ParseStreamHeader(&in, x.size(), &h));
  EXPECT_TRUE(in.empty());
  got->assign(x.size(), 0);
  return DecodeStream(h, std::string_view(payload.get(), c.payload_bytes()),
                      payload.get() + c.payload_bytes(), x.size(), [got](size_t i, uint64_t v) {
                        (*got)[i] = int64_t(v);
                        return 0u;
                      });
}

// As RoundTripWith, with the plan PlanStream makes; returns that plan.
StreamCode RoundTrip(const std::vector<int64_t>& x, std::vector<int64_t>* got, bool* ok) {
  const StreamCode c = PlanStream(x.data(), x.size());
  *ok = RoundTripWith(c, x, got);
  return c;
}

TEST(ResidualTest, EveryClassCountRoundTrips) {
  const std::vector<std::vector<int>> shapes = {
      {7},
      {3, 19},
      {2, 20, 40},
      {2, 17, 32, 47},
      {2, 15, 28, 41, 54},
      {2, 12, 22, 32, 42, 52},
      {2, 11, 20, 29, 38, 47, 56},
      {2, 10, 18, 26, 34, 42, 50, 64},
  };
  Rng rng(11);
  for (const auto& widths : shapes) {
    for (int order : {1, 2}) {
      for (size_t n : {1u, 2u, 3u, 64u, 65u, 1000u, 1024u}) {
        const auto x = WithResidualWidths(rng, n, widths, order);
        StreamCode c;
        c.order = order;
        c.k = int(widths.size());
        for (size_t i = 0; i < widths.size(); ++i) c.widths[i] = uint8_t(widths[i]);
        std::vector<int64_t> got;
        ASSERT_TRUE(RoundTripWith(c, x, &got)) << "k=" << c.k << " n=" << n;
        ASSERT_EQ(got, x) << "k=" << c.k << " order=" << order << " n=" << n;
        bool ok = false;
        const StreamCode planned = RoundTrip(x, &got, &ok);
        ASSERT_TRUE(ok) << "planned k=" << planned.k << " n=" << n;
        ASSERT_EQ(got, x) << "planned, k=" << c.k << " n=" << n;
      }
    }
  }
}

TEST(ResidualTest, NoisyLevelsUseFrameOfReference) {
  Rng rng(13);
  for (size_t n : {1u, 2u, 3u, 100u, 1024u}) {
    std::vector<int64_t> x(n);
    for (auto& v : x) v = 937 + int64_t(rng() % 64);  // 6 bits of noise around a level
    std::vector<int64_t> got;
    bool ok = false;
    const StreamCode c = RoundTrip(x, &got, &ok);
    ASSERT_TRUE(ok) << "n " << n;
    ASSERT_EQ(got, x);
    if (n >= 100) {
      EXPECT_EQ(c.order, 0) << "n " << n;
      EXPECT_LE(c.payload_bytes(), (6 * n + 7) / 8);  // deltas would need 7 bits
    }
  }
  // The full int64 range: minimum INT64_MIN, residuals up to 2^64 - 1.
  std::vector<int64_t> wide = {INT64_MIN, INT64_MAX, 0, -1, INT64_MIN, 1};
  StreamCode c;
  c.order = 0;
  c.base = INT64_MIN;
  c.widths[0] = 64;
  std::vector<int64_t> got;
  ASSERT_TRUE(RoundTripWith(c, wide, &got));
  EXPECT_EQ(got, wide);
}

TEST(ResidualTest, ArbitraryInt64SequencesRoundTrip) {
  Rng rng(12);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<int64_t> x(1 + rng() % 1024);
    const int kind = iter % 3;
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = kind == 0   ? int64_t(rng())
             : kind == 1 ? int64_t(i * i * 37) - int64_t(rng() % 3)  // smooth: order 2
                         : (rng() % 2 ? INT64_MAX : INT64_MIN);
    }
    std::vector<int64_t> got;
    bool ok = false;
    const StreamCode c = RoundTrip(x, &got, &ok);
    ASSERT_TRUE(ok) << "iteration " << iter;
    ASSERT_EQ(got, x) << "iteration " << iter << " order " << c.order << " k " << c.k;
  }
}

TEST(ResidualTest, EqualDeltasHaveNoPayload) {
  std::vector<int64_t> x;
  for (int i = 0; i < 1024; ++i) x.push_back(1000 + 7 * i);
  const StreamCode c = PlanStream(x.data(), x.size());
  EXPECT_EQ(c.payload_bytes(), 0u);
}

TEST(ResidualTest, SmoothSequencesUseSecondOrder) {
  std::vector<int64_t> x;
  for (int64_t i = 0; i < 1024; ++i) x.push_back(i * i);
  EXPECT_EQ(PlanStream(x.data(), x.size()).order, 2);
}

TEST(ResidualTest, ASelectorBeyondTheClassesIsRejected) {
  // k = 3 takes 2-bit selectors; selector value 3 names no class.
  StreamHeader h;
  h.code.order = 1;
  h.code.k = 3;
  h.code.widths[0] = 1;
  h.code.widths[1] = 2;
  h.code.widths[2] = 3;
  const size_t n = 5;  // 4 residuals: selectors 0, 1, 2, 3 in one byte
  std::string payload;
  payload.push_back(char(0b11100100));
  payload.append(2, '\0');  // value bits 1 + 2 + 3 + 0 = 6 -> 1 byte, and spare room
  auto buf = std::make_unique<char[]>(payload.size());
  std::memcpy(buf.get(), payload.data(), payload.size());
  const bool ok = DecodeStream(h, std::string_view(buf.get(), 2), buf.get() + payload.size(), n,
                               [](size_t, uint64_t) { return 0u; });
  EXPECT_FALSE(ok);
}

TEST(ResidualTest, ShortAndOverlongPayloadsAreRejected) {
  Rng rng(13);
  const auto x = WithResidualWidths(rng, 500, {3, 9});
  const StreamCode c = PlanStream(x.data(), x.size());
  std::string header;
  WriteStreamHeader(c, x.data(), x.size(), &header);
  std::vector<char> payload(c.payload_bytes() + 8);
  WriteStreamPayload(c, x.data(), x.size(), payload.data());
  StreamHeader h;
  std::string_view in = header;
  ASSERT_TRUE(ParseStreamHeader(&in, x.size(), &h));
  auto decode = [&](size_t size) {
    return DecodeStream(h, std::string_view(payload.data(), size), payload.data() + size, x.size(),
                        [](size_t, uint64_t) { return 0u; });
  };
  EXPECT_TRUE(decode(c.payload_bytes()));
  EXPECT_FALSE(decode(c.payload_bytes() - 1));
  EXPECT_FALSE(decode(c.payload_bytes() + 1));
}

TEST(ResidualTest, ARejectedValueFailsTheStream) {
  std::vector<int64_t> x = {1, 2, 3, 4};
  std::vector<int64_t> got;
  const StreamCode c = PlanStream(x.data(), x.size());
  std::string header;
  WriteStreamHeader(c, x.data(), x.size(), &header);
  StreamHeader h;
  std::string_view in = header;
  ASSERT_TRUE(ParseStreamHeader(&in, x.size(), &h));
  const char* empty = header.data();
  EXPECT_FALSE(DecodeStream(h, std::string_view(empty, 0), empty, x.size(),
                            [](size_t i, uint64_t) { return unsigned(i == 2); }));
}

}  // namespace
}  // namespace cohort::series::internal
