#include "series/residual.h"

#include <algorithm>
#include <bit>
#include <iterator>

namespace cohort::series::internal {
namespace {

constexpr int kMedianSamples = 31;  // differences sampled to pick a stream's base

int BitWidth(uint64_t z) { return 64 - std::countl_zero(z); }
int VarintLength(uint64_t v) { return v < 128 ? 1 : 1 + (BitWidth(v) - 1) / 7; }
uint64_t Zz(uint64_t diff, uint64_t base) { return coding::ZigZag(int64_t(diff - base)); }

// Median of up to kMedianSamples evenly spread differences of order `order` (count m): a base
// that centres the residuals on the stream's typical step.
int64_t SampleMedian(const int64_t* x, size_t n, int order) {
  const size_t m = n - size_t(order);
  const size_t take = std::min<size_t>(m, kMedianSamples);
  int64_t sample[kMedianSamples];
  for (size_t j = 0; j < take; ++j) {
    const size_t i = size_t(order) + j * m / take;  // the difference ending at x[i]
    uint64_t d = uint64_t(x[i]) - uint64_t(x[i - 1]);
    if (order == 2) d -= uint64_t(x[i - 1]) - uint64_t(x[i - 2]);
    sample[j] = int64_t(d);
  }
  std::nth_element(sample, sample + take / 2, sample + take);
  return sample[take / 2];
}

// Chooses k and the class widths minimising the payload bits for a histogram of residual
// widths (hist[w] = residuals needing exactly w bits): every residual costs the selector width of
// k plus its class's width. Exact dynamic programme over the distinct widths present.
void FitClasses(const uint32_t (&hist)[kMaxWidth + 1], StreamCode* code) {
  int v[kMaxWidth + 1];
  uint64_t cum[kMaxWidth + 2];
  int d = 0;
  cum[0] = 0;
  for (int w = 0; w <= kMaxWidth; ++w) {
    if (hist[w] == 0) continue;
    v[d] = w;
    cum[d + 1] = cum[d] + hist[w];
    ++d;
  }
  code->k = 1;
  std::fill(std::begin(code->widths), std::end(code->widths), 0);
  code->selector_bits = code->value_bits = 0;
  if (d == 0) return;
  const uint64_t m = cum[d];
  // f[c][i]: fewest value bits for the residuals of the first i distinct widths in c + 1
  // classes, the last ending at width v[i-1]; from[c][i]: where that class starts.
  constexpr uint64_t kInf = ~uint64_t{0};
  uint64_t f[kMaxClasses][kMaxWidth + 2];
  int from[kMaxClasses][kMaxWidth + 2];
  for (int i = 1; i <= d; ++i) f[0][i] = uint64_t(v[i - 1]) * cum[i];
  uint64_t best = uint64_t(v[d - 1]) * cum[d];  // k = 1 (= f[0][d]): no selectors
  int best_k = 1;
  for (int c = 1; c < std::min(kMaxClasses, d); ++c) {
    for (int i = c + 1; i <= d; ++i) {
      f[c][i] = kInf;
      for (int j = c; j < i; ++j) {
        const uint64_t cost = f[c - 1][j] + uint64_t(v[i - 1]) * (cum[i] - cum[j]);
        if (cost < f[c][i]) {
          f[c][i] = cost;
          from[c][i] = j;
        }
      }
    }
    const uint64_t cost = f[c][d] + m * uint64_t(std::bit_width(unsigned(c)));
    if (cost < best) {
      best = cost;
      best_k = c + 1;
    }
  }
  code->k = best_k;
  for (int c = best_k - 1, i = d; c >= 0; --c) {
    code->widths[c] = uint8_t(v[i - 1]);
    if (c > 0) i = from[c][i];
  }
  code->selector_bits = m * uint64_t(code->selector_width());
  code->value_bits = best - code->selector_bits;
}

uint64_t HeaderBytes(const StreamCode& c, const int64_t* x, size_t n) {
  uint64_t bytes = 1 + uint64_t(c.k) + VarintLength(coding::ZigZag(c.base));
  if (c.order > 0) bytes += VarintLength(coding::ZigZag(x[0]));
  if (c.order == 2 && n >= 2) {
    bytes += VarintLength(coding::ZigZag(int64_t(uint64_t(x[1]) - uint64_t(x[0]))));
  }
  return bytes;
}

}  // namespace

// Order 0 (frame of reference): base = min, every x[i] - base written unsigned.
StreamCode PlanFrameOfReference(const int64_t* x, size_t n) {
  StreamCode zero;
  zero.order = 0;
  zero.base = *std::min_element(x, x + n);
  uint32_t h[2][kMaxWidth + 1] = {};
  for (size_t i = 0; i < n; ++i) ++h[i & 1][BitWidth(uint64_t(x[i]) - uint64_t(zero.base))];
  uint32_t hist[kMaxWidth + 1];
  for (int w = 0; w <= kMaxWidth; ++w) hist[w] = h[0][w] + h[1][w];
  FitClasses(hist, &zero);
  zero.header_bytes = HeaderBytes(zero, x, n);
  return zero;
}

StreamCode PlanStream(const int64_t* x, size_t n, bool frame_of_reference) {
  StreamCode one;  // order 1
  one.header_bytes = HeaderBytes(one, x, n);
  if (n < 2) return one;
  StreamCode two;
  two.order = 2;
  one.base = SampleMedian(x, n, 1);
  const uint64_t b1 = uint64_t(one.base);
  // One pass filling both histograms, each split in two by parity so that runs of equal widths
  // do not serialise on one counter.
  uint32_t h1[2][kMaxWidth + 1] = {}, h2[2][kMaxWidth + 1] = {};
  uint64_t prev = uint64_t(x[1]) - uint64_t(x[0]);
  ++h1[0][BitWidth(Zz(prev, b1))];
  if (n >= 3) {
    two.base = SampleMedian(x, n, 2);
    const uint64_t b2 = uint64_t(two.base);
    for (size_t i = 2; i < n; ++i) {
      const uint64_t d = uint64_t(x[i]) - uint64_t(x[i - 1]);
      ++h1[i & 1][BitWidth(Zz(d, b1))];
      ++h2[i & 1][BitWidth(Zz(d - prev, b2))];
      prev = d;
    }
  }
  uint32_t hist[kMaxWidth + 1];
  for (int w = 0; w <= kMaxWidth; ++w) hist[w] = h1[0][w] + h1[1][w];
  FitClasses(hist, &one);
  one.header_bytes = HeaderBytes(one, x, n);
  for (int w = 0; w <= kMaxWidth; ++w) hist[w] = h2[0][w] + h2[1][w];
  FitClasses(hist, &two);
  two.header_bytes = HeaderBytes(two, x, n);
  const StreamCode& delta = two.total_bits() < one.total_bits() ? two : one;
  if (!frame_of_reference) return delta;
  const StreamCode zero = PlanFrameOfReference(x, n);
  return zero.total_bits() < delta.total_bits() ? zero : delta;
}

void WriteStreamHeader(const StreamCode& c, const int64_t* x, size_t n, std::string* out) {
  out->push_back(char(c.order << 4 | c.k));
  for (int i = 0; i < c.k; ++i) out->push_back(char(c.widths[i]));
  if (c.order > 0) coding::PutVarint64(out, coding::ZigZag(x[0]));
  if (c.order == 2 && n >= 2) {
    coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(x[1]) - uint64_t(x[0]))));
  }
  coding::PutVarint64(out, coding::ZigZag(c.base));
}

void WriteStreamPayload(const StreamCode& c, const int64_t* x, size_t n, char* dst) {
  if (n < size_t(c.order) + 1 || (c.k == 1 && c.widths[0] == 0)) return;  // no payload
  uint8_t class_of_width[kMaxWidth + 1];
  for (int width = kMaxWidth, cls = c.k - 1; width >= 0; --width) {
    while (cls > 0 && c.widths[cls - 1] >= width) --cls;
    class_of_width[width] = uint8_t(cls);
  }
  BitWriter selectors(dst);
  BitWriter values(dst + (c.selector_bits + 7) / 8);
  const int selector_width = c.selector_width();
  const uint64_t base = uint64_t(c.base);
  auto field = [&](uint64_t z) {
    const int cls = class_of_width[BitWidth(z)];
    selectors.Write(uint64_t(cls), selector_width);
    values.Write(z, c.widths[cls]);
  };
  auto put = [&](uint64_t diff) { field(Zz(diff, base)); };
  if (c.order == 0) {
    for (size_t i = 0; i < n; ++i) field(uint64_t(x[i]) - base);
    selectors.Finish();
    values.Finish();
    return;
  }
  uint64_t prev = uint64_t(x[1]) - uint64_t(x[0]);
  if (c.order == 1) put(prev);
  for (size_t i = 2; i < n; ++i) {
    const uint64_t d = uint64_t(x[i]) - uint64_t(x[i - 1]);
    put(c.order == 1 ? d : d - prev);
    prev = d;
  }
  // The selectors end before the values begin, so finishing them cannot overwrite any value.
  selectors.Finish();
  values.Finish();
}

bool ParseStreamHeader(std::string_view* in, size_t n, StreamHeader* h) {
  if (in->empty()) return false;
  const uint8_t order_k = uint8_t((*in)[0]);
  in->remove_prefix(1);
  StreamCode& c = h->code;
  c.order = order_k >> 4;
  c.k = order_k & 0x0F;
  if (c.order > 2 || c.k < 1 || c.k > kMaxClasses) return false;
  if (in->size() < size_t(c.k)) return false;
  for (int i = 0; i < c.k; ++i) {
    c.widths[i] = uint8_t((*in)[size_t(i)]);
    if (c.widths[i] > kMaxWidth || (i > 0 && c.widths[i] <= c.widths[i - 1])) return false;
  }
  in->remove_prefix(size_t(c.k));
  uint64_t v;
  h->x0 = h->d0 = 0;
  if (c.order > 0) {
    if (!coding::GetVarint64(in, &v)) return false;
    h->x0 = uint64_t(coding::UnZigZag(v));
  }
  if (c.order == 2 && n >= 2) {
    if (!coding::GetVarint64(in, &v)) return false;
    h->d0 = uint64_t(coding::UnZigZag(v));
  }
  if (!coding::GetVarint64(in, &v)) return false;
  c.base = coding::UnZigZag(v);
  return true;
}

}  // namespace cohort::series::internal
