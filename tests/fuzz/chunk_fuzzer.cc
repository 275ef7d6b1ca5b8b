// Fuzz target: the series chunk codec (src/series/chunk.h). The first input byte picks a mode:
//   0: the rest is an encoded chunk, as read from a store file;
//   1: the same, with its CRC-32C recomputed, so that the fuzzer explores the payload decoder
//      behind the checksum;
//   2: the rest is a list of points (step, time, value as raw 8-byte words), which are encoded,
//      decoded and compared bit for bit.
// Properties: decoding never crashes and returns at most kMaxChunkPoints points; whatever
// decodes re-encodes to a chunk that decodes to the same points (bit for bit: NaN payloads,
// -0.0), also when stepped through with a ChunkIterator; an error is kCorruption.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/coding.h"
#include "core/crc32c.h"
#include "fuzz_check.h"
#include "series/chunk.h"

namespace {

using cohort::series::Point;
namespace series = cohort::series;

uint64_t Bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

void CheckSame(const std::vector<Point>& a, const std::vector<Point>& b) {
  FUZZ_CHECK(a.size() == b.size(), "%zu points became %zu", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    FUZZ_CHECK(a[i].step == b[i].step && a[i].time_ms == b[i].time_ms &&
                   Bits(a[i].value) == Bits(b[i].value),
               "point %zu: (%lld, %lld, %016llx) became (%lld, %lld, %016llx)", i,
               static_cast<long long>(a[i].step), static_cast<long long>(a[i].time_ms),
               static_cast<unsigned long long>(Bits(a[i].value)), static_cast<long long>(b[i].step),
               static_cast<long long>(b[i].time_ms),
               static_cast<unsigned long long>(Bits(b[i].value)));
  }
}

// Encodes `points`, decodes the result and checks that nothing changed.
void CheckRoundTrip(const std::vector<Point>& points) {
  series::ChunkEncoder encoder;
  for (const Point& p : points) encoder.Append(p.step, p.time_ms, p.value);
  std::string encoded = encoder.Encode();
  auto decoded = series::DecodeChunk(encoded);
  FUZZ_CHECK(decoded.ok(), "an encoded chunk does not decode: %s",
             decoded.status().ToString().c_str());
  CheckSame(points, *decoded);
  series::ChunkIterator it;
  FUZZ_CHECK(it.Reset(encoded).ok(), "the iterator refuses an encoded chunk");
  std::vector<Point> stepped;
  while (it.Next()) stepped.push_back(it.At());
  CheckSame(points, stepped);
}

void DecodeAndCheck(std::string_view encoded) {
  auto points = series::DecodeChunk(encoded);
  if (!points.ok()) {
    FUZZ_CHECK(points.status().code() == cohort::StatusCode::kCorruption, "%s",
               points.status().ToString().c_str());
    return;
  }
  FUZZ_CHECK(points->size() <= static_cast<size_t>(series::kMaxChunkPoints), "%zu points",
             points->size());
  CheckRoundTrip(*points);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (mode == 0) {
    DecodeAndCheck(rest);
  } else if (mode == 1) {
    if (rest.size() >= 4) {
      size_t body = rest.size() - 4;
      uint32_t crc = cohort::crc32c::Value(rest.data(), body);
      for (int i = 0; i < 4; ++i) rest[body + i] = static_cast<char>(crc >> (8 * i));
    }
    DecodeAndCheck(rest);
  } else {
    std::vector<Point> points;
    for (size_t at = 0; at + 24 <= rest.size() && points.size() < series::kMaxChunkPoints;
         at += 24) {
      Point p;
      p.step = static_cast<int64_t>(cohort::coding::DecodeFixed64(rest.data() + at));
      p.time_ms = static_cast<int64_t>(cohort::coding::DecodeFixed64(rest.data() + at + 8));
      uint64_t bits = cohort::coding::DecodeFixed64(rest.data() + at + 16);
      std::memcpy(&p.value, &bits, sizeof bits);
      points.push_back(p);
    }
    CheckRoundTrip(points);
  }
  return 0;
}
