#include "series/chunk.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "core/coding.h"
#include "core/crc32c.h"
#include "series/bits.h"
#include "series/residual.h"
#include "series/scaled.h"
#include "series/value_bits.h"
#include "series/xor.h"

namespace cohort::series {
namespace {

using internal::BitCounter;
using internal::BitReader;
using internal::BitWriter;
using internal::StreamCode;
using internal::StreamHeader;

constexpr size_t kCrcSize = 4;
// In place of the step stream's header: every step equals its time (system metrics, whose step
// is their sample time); there is no step payload. (An order of 3 is no integer stream's.)
constexpr uint8_t kStepsAreTimes = 0x30;

Status Corrupt(std::string what) { return Status::Corruption("series chunk: " + std::move(what)); }

bool LessWithSignedZero(double a, double b) {
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

// Buffers reused by Encode() calls on one thread.
struct EncodeScratch {
  std::vector<int64_t> best, candidate;  // residual-coded values: the cheapest so far, the next
  std::vector<uint64_t> patterns;        // XOR-coded patterns
  std::vector<uint16_t> exceptions, best_exceptions;  // kScaled: positions of exceptions
};

// A chunk whose values are more than this share exceptions is not worth the scaled mode.
constexpr size_t kMaxExceptionShare = 4;  // 1/4

int VarintLength(uint64_t v) { return v < 128 ? 1 : 1 + (63 - std::countl_zero(v)) / 7; }

// The bytes of the scaled mode's divisor and exception list (docs/formats.md).
uint64_t ScaledHeaderBytes(uint64_t divisor, const std::vector<uint16_t>& exceptions) {
  uint64_t bytes = uint64_t(VarintLength(divisor)) + uint64_t(VarintLength(exceptions.size()));
  for (size_t j = 0; j < exceptions.size(); ++j) {
    bytes += uint64_t(VarintLength(j == 0 ? exceptions[0] : exceptions[j] - exceptions[j - 1] - 1));
  }
  return bytes + 8 * exceptions.size();
}

}  // namespace

void ChunkSummary::Add(int64_t step, int64_t time_ms, double value) {
  if (count == 0 || step < min_step) first = value;
  if (count == 0 || step >= max_step) last = value;
  ++count;
  min_step = std::min(min_step, step);
  max_step = std::max(max_step, step);
  min_time = std::min(min_time, time_ms);
  max_time = std::max(max_time, time_ms);
  if (std::isnan(value)) {
    ++nan_count;
    return;
  }
  if (LessWithSignedZero(value, min)) min = value;
  if (LessWithSignedZero(max, value)) max = value;
  sum += value;
}

void ChunkSummary::Merge(const ChunkSummary& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  if (o.min_step < min_step) first = o.first;
  if (o.max_step >= max_step) last = o.last;
  count += o.count;
  nan_count += o.nan_count;
  min_step = std::min(min_step, o.min_step);
  max_step = std::max(max_step, o.max_step);
  min_time = std::min(min_time, o.min_time);
  max_time = std::max(max_time, o.max_time);
  if (LessWithSignedZero(o.min, min)) min = o.min;
  if (LessWithSignedZero(max, o.max)) max = o.max;
  sum += o.sum;
}

ChunkEncoder::ChunkEncoder() = default;

void ChunkEncoder::Append(int64_t step, int64_t time_ms, double value) {
  steps_.push_back(step);
  times_.push_back(time_ms);
  values_.push_back(value);
  summary_.Add(step, time_ms, value);
  int64_t i;
  uint32_t f;
  if (all_integer_) all_integer_ = internal::ToInteger(value, &i);
  if (all_float32_) all_float32_ = internal::ToFloat32Bits(coding::DoubleBits(value), &f);
}

std::string ChunkEncoder::Encode() const {
  const size_t n = steps_.size();
  std::string out;
  out.push_back(char(kChunkMagic | kChunkVersion));
  if (n == 0) {
    out.push_back(char(ValueMode::kXor64));
    coding::PutVarint64(&out, 0);
    coding::PutFixed32(&out, crc32c::Value(out));
    return out;
  }
  const bool steps_are_times = steps_ == times_;
  const StreamCode step_code =
      steps_are_times ? StreamCode{} : internal::PlanStream(steps_.data(), n, false);
  const StreamCode time_code = internal::PlanStream(times_.data(), n, false);

  // Price every value mode the chunk allows and keep the cheapest (ties: the earlier tried).
  thread_local EncodeScratch scratch;
  std::vector<int64_t>& best = scratch.best;
  std::vector<int64_t>& candidate = scratch.candidate;
  std::vector<uint64_t>& patterns = scratch.patterns;
  best.resize(n);
  candidate.resize(n);
  patterns.resize(n);
  ValueMode mode = ValueMode::kXor64;
  uint64_t best_bits = ~uint64_t{0};
  StreamCode value_code;
  uint64_t divisor = 0;  // kScaled
  auto try_stream = [&](ValueMode m, uint64_t extra_bytes = 0) {
    const StreamCode c = internal::PlanStream(candidate.data(), n);
    const uint64_t bits = c.total_bits() + 8 * extra_bytes;
    if (bits < best_bits) {
      best_bits = bits;
      mode = m;
      value_code = c;
      best.swap(candidate);
    }
  };
  auto try_xor = [&](ValueMode m, auto width) {
    BitCounter counter;
    internal::XorEncode<decltype(width)::value>(patterns.data(), n, &counter);
    if (counter.bits() < best_bits) {
      best_bits = counter.bits();
      mode = m;
    }
  };
  if (all_integer_) {
    // The integer coding beats float codings of integers (their float patterns jump about).
    for (size_t i = 0; i < n; ++i) internal::ToInteger(values_[i], &candidate[i]);
    try_stream(ValueMode::kInteger);
  } else if (all_float32_) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t f = 0;
      internal::ToFloat32Bits(coding::DoubleBits(values_[i]), &f);
      patterns[i] = f;
      candidate[i] = internal::Ordered32(f);
    }
    try_stream(ValueMode::kFloat32Delta);
    try_xor(ValueMode::kXor32, std::integral_constant<int, 32>());
  } else {
    for (size_t i = 0; i < n; ++i) {
      patterns[i] = coding::DoubleBits(values_[i]);
      candidate[i] = internal::Ordered64(patterns[i]);
    }
    try_stream(ValueMode::kFloat64Delta);
    try_xor(ValueMode::kXor64, std::integral_constant<int, 64>());
  }
  if (!all_integer_) {
    // Integers over a divisor: short decimals, ratios of counts (NaN, -0.0 and the rest as
    // exceptions). Priced last: it must beat the modes above by a bit to be chosen.
    uint64_t divisors[2];
    const int count = internal::CandidateDivisors(values_.data(), n, divisors, 2);
    for (int c = 0; c < count; ++c) {
      // The power of ten above the sample's divisor only helps with exceptions that it removes.
      if (c > 0 && divisor == divisors[0] && scratch.best_exceptions.empty()) break;
      if (!internal::ScaleValues(values_.data(), n, divisors[c], n / kMaxExceptionShare,
                                 candidate.data(), &scratch.exceptions)) {
        continue;
      }
      const uint64_t before = best_bits;
      try_stream(ValueMode::kScaled, ScaledHeaderBytes(divisors[c], scratch.exceptions));
      if (best_bits < before) {
        divisor = divisors[c];
        scratch.best_exceptions.swap(scratch.exceptions);
      }
    }
  }
  const bool xor_mode = mode == ValueMode::kXor32 || mode == ValueMode::kXor64;

  out.push_back(char(mode));
  coding::PutVarint64(&out, n);
  if (steps_are_times) {
    out.push_back(char(kStepsAreTimes));
  } else {
    internal::WriteStreamHeader(step_code, steps_.data(), n, &out);
  }
  internal::WriteStreamHeader(time_code, times_.data(), n, &out);
  if (mode == ValueMode::kScaled) {
    const std::vector<uint16_t>& ex = scratch.best_exceptions;
    coding::PutVarint64(&out, divisor);
    coding::PutVarint64(&out, ex.size());
    for (size_t j = 0; j < ex.size(); ++j) {
      coding::PutVarint64(&out, j == 0 ? ex[0] : uint64_t(ex[j] - ex[j - 1] - 1));
    }
    for (uint16_t pos : ex) coding::PutFixed64(&out, coding::DoubleBits(values_[pos]));
  }
  if (!xor_mode) internal::WriteStreamHeader(value_code, best.data(), n, &out);
  // Each stream's payload starts on a byte; the value payload runs to the checksum.
  const uint64_t step_bytes = steps_are_times ? 0 : step_code.payload_bytes();
  const uint64_t time_bytes = time_code.payload_bytes();
  const uint64_t value_bytes = xor_mode ? (best_bits + 7) / 8 : value_code.payload_bytes();
  coding::PutVarint64(&out, step_bytes);
  coding::PutVarint64(&out, time_bytes);
  const size_t start = out.size();
  out.resize(start + step_bytes + time_bytes + value_bytes + 8);  // 8: slack for the writers
  char* dst = out.data() + start;
  if (!steps_are_times) internal::WriteStreamPayload(step_code, steps_.data(), n, dst);
  internal::WriteStreamPayload(time_code, times_.data(), n, dst + step_bytes);
  dst += step_bytes + time_bytes;
  if (xor_mode) {
    BitWriter w(dst);
    if (mode == ValueMode::kXor32) {
      internal::XorEncode<32>(patterns.data(), n, &w);
    } else {
      internal::XorEncode<64>(patterns.data(), n, &w);
    }
    w.Finish();
  } else {
    internal::WriteStreamPayload(value_code, best.data(), n, dst);
  }
  out.resize(start + step_bytes + time_bytes + value_bytes);
  coding::PutFixed32(&out, crc32c::Value(out));
  return out;
}

namespace {

Status DecodeBody(std::string_view in, std::vector<Point>* out) {
  if (in.size() < 3 + kCrcSize) {
    return Corrupt("truncated (" + std::to_string(in.size()) + " bytes)");
  }
  const uint8_t magic_version = uint8_t(in[0]);
  if ((magic_version & 0xF0) != kChunkMagic) return Corrupt("bad magic byte");
  if ((magic_version & 0x0F) != kChunkVersion) {
    return Corrupt("unsupported version " + std::to_string(magic_version & 0x0F));
  }
  const size_t body_size = in.size() - kCrcSize;
  if (coding::DecodeFixed32(in.data() + body_size) != crc32c::Value(in.data(), body_size)) {
    return Corrupt("checksum mismatch");
  }
  std::string_view body = in.substr(1, body_size - 1);
  const uint8_t mode_byte = uint8_t(body[0]);
  body.remove_prefix(1);
  if (mode_byte > uint8_t(ValueMode::kScaled)) {
    return Corrupt("unknown value mode " + std::to_string(mode_byte));
  }
  const ValueMode mode = ValueMode(mode_byte);
  uint64_t count = 0;
  if (!coding::GetVarint64(&body, &count)) return Corrupt("truncated header");
  if (count > uint64_t(kMaxChunkPoints)) {
    return Corrupt("point count " + std::to_string(count) + " exceeds the maximum");
  }
  const size_t n = size_t(count);
  if (n == 0) {
    out->clear();
    return body.empty() ? Status::Ok() : Corrupt("bytes after an empty chunk");
  }
  StreamHeader steps, times, values;
  const bool steps_are_times = !body.empty() && uint8_t(body[0]) == kStepsAreTimes;
  if (steps_are_times) body.remove_prefix(1);
  if ((!steps_are_times && !internal::ParseStreamHeader(&body, n, &steps)) ||
      !internal::ParseStreamHeader(&body, n, &times)) {
    return Corrupt("bad step or time stream header");
  }
  uint64_t divisor = 1;
  thread_local std::vector<uint16_t> exceptions;
  exceptions.clear();
  if (mode == ValueMode::kScaled) {
    uint64_t count = 0;
    if (!coding::GetVarint64(&body, &divisor) || divisor == 0 || divisor > internal::kMaxDivisor ||
        !coding::GetVarint64(&body, &count) || count > n) {
      return Corrupt("bad divisor or exception count");
    }
    uint64_t pos = 0;
    for (uint64_t j = 0; j < count; ++j) {
      uint64_t gap = 0;
      if (!coding::GetVarint64(&body, &gap) || gap >= n - pos) {
        return Corrupt("bad exception position");
      }
      pos += gap;
      exceptions.push_back(uint16_t(pos++));
    }
    if (body.size() < 8 * count) return Corrupt("truncated exceptions");
  }
  const std::string_view exception_values = body.substr(0, 8 * exceptions.size());
  body.remove_prefix(exception_values.size());
  const bool xor_mode = mode == ValueMode::kXor32 || mode == ValueMode::kXor64;
  if (!xor_mode && !internal::ParseStreamHeader(&body, n, &values)) {
    return Corrupt("bad value stream header");
  }
  uint64_t step_bytes = 0, time_bytes = 0;
  if (!coding::GetVarint64(&body, &step_bytes) || !coding::GetVarint64(&body, &time_bytes) ||
      step_bytes > body.size() || time_bytes > body.size() - step_bytes) {
    return Corrupt("bad stream lengths");
  }
  out->resize(n);
  Point* p = out->data();
  const char* load_end = in.data() + in.size();
  const bool steps_ok = steps_are_times
                            ? step_bytes == 0
                            : internal::DecodeStream(steps, body.substr(0, step_bytes), load_end, n,
                                                     [p](size_t i, uint64_t x) {
                                                       p[i].step = int64_t(x);
                                                       return 0u;
                                                     });
  const bool times_ok = internal::DecodeStream(times, body.substr(step_bytes, time_bytes), load_end,
                                               n, [p](size_t i, uint64_t x) {
                                                 p[i].time_ms = int64_t(x);
                                                 return 0u;
                                               });
  if (steps_are_times) {
    for (size_t i = 0; i < n; ++i) p[i].step = p[i].time_ms;
  }
  if (!steps_ok || !times_ok) return Corrupt("step or time payload truncated or overlong");
  const std::string_view value_payload = body.substr(step_bytes + time_bytes);
  bool clean = true;  // the payload held exactly the values, each valid for its mode
  switch (mode) {
    case ValueMode::kXor64:
    case ValueMode::kXor32: {
      BitReader r(value_payload.data(), value_payload.size());
      bool windows_ok;
      if (mode == ValueMode::kXor64) {
        windows_ok = internal::XorDecode<64>(
            &r, n, [p](size_t i, uint64_t b) { p[i].value = coding::BitsDouble(b); });
      } else {
        windows_ok = internal::XorDecode<32>(&r, n, [p](size_t i, uint64_t b) {
          p[i].value = coding::BitsDouble(internal::FromFloat32Bits(uint32_t(b)));
        });
      }
      clean = windows_ok && r.AtCleanEnd();
      break;
    }
    case ValueMode::kInteger:
      clean = internal::DecodeStream(values, value_payload, load_end, n, [p](size_t i, uint64_t x) {
        p[i].value = static_cast<double>(int64_t(x));
        return unsigned(!internal::IntegerInRange(int64_t(x)));
      });
      break;
    case ValueMode::kFloat32Delta:
      clean = internal::DecodeStream(values, value_payload, load_end, n, [p](size_t i, uint64_t x) {
        uint32_t f = 0;
        const bool ok = internal::FromOrdered32(int64_t(x), &f);
        p[i].value = coding::BitsDouble(internal::FromFloat32Bits(f));
        return unsigned(!ok);
      });
      break;
    case ValueMode::kFloat64Delta:
      clean = internal::DecodeStream(values, value_payload, load_end, n, [p](size_t i, uint64_t x) {
        p[i].value = coding::BitsDouble(internal::FromOrdered64(int64_t(x)));
        return 0u;
      });
      break;
    case ValueMode::kScaled: {
      internal::NearestRounding rounding;
      const double d = double(divisor);
      clean =
          internal::DecodeStream(values, value_payload, load_end, n, [p, d](size_t i, uint64_t x) {
            p[i].value = internal::ScaledValue(int64_t(x), d);
            return unsigned(!internal::IntegerInRange(int64_t(x)));
          });
      for (size_t j = 0; j < exceptions.size(); ++j) {
        p[exceptions[j]].value =
            coding::BitsDouble(coding::DecodeFixed64(exception_values.data() + 8 * j));
      }
      break;
    }
  }
  if (!clean) return Corrupt("value payload truncated, overlong or out of range for its mode");
  return Status::Ok();
}

}  // namespace

ChunkIterator::ChunkIterator() { points_.reserve(kMaxChunkPoints); }

Status ChunkIterator::Reset(std::string_view encoded) {
  next_ = 0;
  Status s = DecodeBody(encoded, &points_);
  if (!s.ok()) points_.clear();
  return s;
}

Result<std::vector<Point>> DecodeChunk(std::string_view encoded) {
  std::vector<Point> points;
  COHORT_RETURN_IF_ERROR(DecodeBody(encoded, &points));
  return points;
}

}  // namespace cohort::series
