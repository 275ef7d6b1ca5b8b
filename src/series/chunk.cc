#include "series/chunk.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "core/coding.h"
#include "core/crc32c.h"
#include "series/bits.h"
#include "series/residual.h"
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

Status Corrupt(std::string what) { return Status::Corruption("series chunk: " + std::move(what)); }

bool LessWithSignedZero(double a, double b) {
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

// Buffers reused by Encode() calls on one thread.
struct EncodeScratch {
  std::vector<int64_t> best, candidate;  // residual-coded values: the cheapest so far, the next
  std::vector<uint64_t> patterns;        // XOR-coded patterns
};

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
  const StreamCode step_code = internal::PlanStream(steps_.data(), n);
  const StreamCode time_code = internal::PlanStream(times_.data(), n);

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
  auto try_stream = [&](ValueMode m) {
    const StreamCode c = internal::PlanStream(candidate.data(), n);
    const uint64_t bits = c.payload_bits + 8 * c.header_bytes;
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
    for (size_t i = 0; i < n; ++i) internal::ToInteger(values_[i], &candidate[i]);
    try_stream(ValueMode::kInteger);
  }
  if (all_float32_) {
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
  const bool xor_mode = mode == ValueMode::kXor32 || mode == ValueMode::kXor64;
  const uint64_t value_payload_bits = xor_mode ? best_bits : value_code.payload_bits;

  out.push_back(char(mode));
  coding::PutVarint64(&out, n);
  internal::WriteStreamHeader(step_code, steps_.data(), n, &out);
  internal::WriteStreamHeader(time_code, times_.data(), n, &out);
  if (!xor_mode) internal::WriteStreamHeader(value_code, best.data(), n, &out);
  // Each stream's payload starts on a byte, so that a decoder can run the streams side by side.
  const uint64_t step_bytes = (step_code.payload_bits + 7) / 8;
  const uint64_t time_bytes = (time_code.payload_bits + 7) / 8;
  const uint64_t value_bytes = (value_payload_bits + 7) / 8;
  coding::PutVarint64(&out, step_bytes);
  coding::PutVarint64(&out, time_bytes);
  const size_t start = out.size();
  out.resize(start + step_bytes + time_bytes + value_bytes + 8);  // 8: BitWriter's slack
  BitWriter step_writer(out.data() + start);
  internal::WriteStreamBits(step_code, steps_.data(), n, &step_writer);
  step_writer.Finish();
  BitWriter time_writer(out.data() + start + step_bytes);
  internal::WriteStreamBits(time_code, times_.data(), n, &time_writer);
  time_writer.Finish();
  BitWriter value_writer(out.data() + start + step_bytes + time_bytes);
  if (mode == ValueMode::kXor32) {
    internal::XorEncode<32>(patterns.data(), n, &value_writer);
  } else if (mode == ValueMode::kXor64) {
    internal::XorEncode<64>(patterns.data(), n, &value_writer);
  } else {
    internal::WriteStreamBits(value_code, best.data(), n, &value_writer);
  }
  value_writer.Finish();
  out.resize(start + step_bytes + time_bytes + value_bytes);
  coding::PutFixed32(&out, crc32c::Value(out));
  return out;
}

Result<ChunkEncoder> ChunkEncoder::Resume(std::string_view encoded) {
  std::vector<store::Point> points;
  COHORT_RETURN_IF_ERROR(DecodeChunkInto(encoded, &points));
  ChunkEncoder e;
  e.steps_.reserve(points.size());
  e.times_.reserve(points.size());
  e.values_.reserve(points.size());
  for (const store::Point& p : points) e.Append(p.step, p.time_ms, p.value);
  return e;
}

Result<std::vector<store::Point>> DecodeChunk(std::string_view encoded) {
  std::vector<store::Point> points;
  COHORT_RETURN_IF_ERROR(DecodeChunkInto(encoded, &points));
  return points;
}

namespace {

// Decodes steps and times into p[0..n).
void DecodeSteps(internal::StreamDecoder* steps, internal::StreamDecoder* times, size_t n,
                 store::Point* p) {
  internal::StreamDecoder s = *steps, t = *times;  // locals stay in registers
  p[0].step = int64_t(s.First());
  p[0].time_ms = int64_t(t.First());
  if (n >= 2) {
    p[1].step = int64_t(s.Second());
    p[1].time_ms = int64_t(t.Second());
  }
  for (size_t i = 2; i < n; ++i) {
    p[i].step = int64_t(s.Next());
    p[i].time_ms = int64_t(t.Next());
  }
  *steps = s;
  *times = t;
}

// Decodes steps, times and residual-coded values side by side into p[0..n); convert(x, &ok)
// turns a value stream integer into the double. False when a value was invalid for its mode.
template <typename Convert>
bool DecodeAll(internal::StreamDecoder* steps, internal::StreamDecoder* times,
               const StreamHeader& values, std::string_view value_payload, size_t n,
               store::Point* p, bool* clean, Convert convert) {
  internal::StreamDecoder s = *steps, t = *times;  // locals stay in registers
  const internal::StreamLayout value_layout(values);
  internal::StreamDecoder v(value_layout, value_payload);
  bool ok = true;
  p[0] = {int64_t(s.First()), int64_t(t.First()), convert(v.First(), &ok)};
  if (n >= 2) p[1] = {int64_t(s.Second()), int64_t(t.Second()), convert(v.Second(), &ok)};
  for (size_t i = 2; i < n; ++i) {
    p[i] = {int64_t(s.Next()), int64_t(t.Next()), convert(v.Next(), &ok)};
  }
  *steps = s;
  *times = t;
  *clean = v.Finish();
  return ok;
}

Status DecodeBody(std::string_view in, std::vector<store::Point>* out) {
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
  if (mode_byte > uint8_t(ValueMode::kFloat64Delta)) {
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
  if (!internal::ParseStreamHeader(&body, n, &steps) ||
      !internal::ParseStreamHeader(&body, n, &times)) {
    return Corrupt("bad step or time stream header");
  }
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
  store::Point* p = out->data();
  const internal::StreamLayout step_layout(steps), time_layout(times);
  internal::StreamDecoder sd(step_layout, body.substr(0, step_bytes));
  internal::StreamDecoder td(time_layout, body.substr(step_bytes, time_bytes));
  const std::string_view value_payload = body.substr(step_bytes + time_bytes);
  bool values_ok = true;  // every value valid for its mode, XOR windows possible
  bool clean = true;      // every payload ended where its stream did
  switch (mode) {
    case ValueMode::kXor64:
    case ValueMode::kXor32: {
      DecodeSteps(&sd, &td, n, p);
      BitReader r(value_payload.data(), value_payload.size());
      if (mode == ValueMode::kXor64) {
        values_ok = internal::XorDecode<64>(&r, n, [p](size_t i, uint64_t b) {
          p[i].value = coding::BitsDouble(b);
        });
      } else {
        values_ok = internal::XorDecode<32>(&r, n, [p](size_t i, uint64_t b) {
          p[i].value = coding::BitsDouble(internal::FromFloat32Bits(uint32_t(b)));
        });
      }
      clean = r.AtCleanEnd();
      break;
    }
    case ValueMode::kInteger:
      values_ok = DecodeAll(&sd, &td, values, value_payload, n, p, &clean, [](uint64_t x, bool* ok) {
        *ok &= internal::IntegerInRange(int64_t(x));
        return static_cast<double>(int64_t(x));
      });
      break;
    case ValueMode::kFloat32Delta:
      values_ok = DecodeAll(&sd, &td, values, value_payload, n, p, &clean, [](uint64_t x, bool* ok) {
        uint32_t f = 0;
        *ok &= internal::FromOrdered32(int64_t(x), &f);
        return coding::BitsDouble(internal::FromFloat32Bits(f));
      });
      break;
    case ValueMode::kFloat64Delta:
      values_ok = DecodeAll(&sd, &td, values, value_payload, n, p, &clean, [](uint64_t x, bool*) {
        return coding::BitsDouble(internal::FromOrdered64(int64_t(x)));
      });
      break;
  }
  if (!sd.Finish() || !td.Finish() || !clean) return Corrupt("payload truncated or overlong");
  if (!values_ok) return Corrupt("value out of range for its mode");
  return Status::Ok();
}

}  // namespace

Status DecodeChunkInto(std::string_view encoded, std::vector<store::Point>* out) {
  Status s = DecodeBody(encoded, out);
  if (!s.ok()) out->clear();
  return s;
}

}  // namespace cohort::series
