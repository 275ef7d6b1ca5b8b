// Chunk codec: the compressed block in which a series' points are stored (docs/formats.md,
// "Series chunks").
//
// A chunk holds up to kMaxChunkPoints points (step, time_ms, value) of one series in arrival
// order. Steps and times are integer streams: delta or delta-of-delta residuals (whichever is
// smaller), bit-packed in classes of widths the encoder fits to each stream; a regular sequence
// costs no bits at all. Values are coded in one of several modes (ValueMode), chosen per chunk by
// size: Gorilla XOR of the 64-bit or the float32 patterns, or the same integer streams over the
// integers, over order-preserving float bit patterns, or over integers x of values x / D (short
// decimals, ratios of counts; series/scaled.h). The encoded form carries a
// magic/version byte, the mode, the point count and a CRC-32C, and every double round-trips bit
// for bit (NaN payloads, -0.0, infinities, denormals).
//
// ChunkEncoder is a single-threaded builder (external synchronisation); the free functions are
// thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "series/types.h"

namespace cohort::series {

// Points per chunk. 1,024 (rather than more) so that a bucketed query decodes few points: each
// bucket boundary cuts at most one chunk, and 10M points -> 1,000 buckets decodes ~1M points
// (bench/series_bench.cc, BM_QueryBuckets10M); the cost is ~0.03 B/point of chunk headers.
inline constexpr int kMaxChunkPoints = 1024;
// First byte of an encoded chunk: magic in the high nibble, format version in the low nibble.
inline constexpr uint8_t kChunkMagic = 0xC0;
inline constexpr uint8_t kChunkVersion = 2;

// How a chunk codes its values (second byte of an encoded chunk).
enum class ValueMode : uint8_t {
  kXor64 = 0,         // Gorilla XOR of the 64-bit patterns; any double
  kXor32 = 1,         // Gorilla XOR of the float32 patterns; every value exactly a float32
  kInteger = 2,       // residual-coded integers; every value an integer in [-2^53, 2^53], no -0.0
  kFloat32Delta = 3,  // residual-coded order-preserving float32 patterns; exact float32 values
  kFloat64Delta = 4,  // residual-coded order-preserving 64-bit patterns; any double
  kScaled = 5,  // residual-coded integers x over one divisor D (decimals: D = 10^e), v = x / D;
                // any double, the values that are not such ratios kept as exceptions
};

// Summary of a chunk, kept beside it so that coarse queries need not decode it.
// Steps may arrive out of order; min_step/max_step bound them. min/max ignore NaN (a chunk of
// only NaN has min = +inf, max = -inf); sum ignores NaN. `last` is the value with the highest
// step (the latest arrival among equal steps), `first` the value with the lowest step (the
// earliest arrival among equal steps).
struct ChunkSummary {
  int64_t count = 0;
  int64_t min_step = std::numeric_limits<int64_t>::max();
  int64_t max_step = std::numeric_limits<int64_t>::min();
  int64_t min_time = std::numeric_limits<int64_t>::max();
  int64_t max_time = std::numeric_limits<int64_t>::min();
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double first = 0, last = 0;
  int64_t nan_count = 0;

  void Add(int64_t step, int64_t time_ms, double value);
  // Folds in `o`, the summary of points that arrived after the ones summarised here.
  void Merge(const ChunkSummary& o);
};

class ChunkEncoder {
 public:
  ChunkEncoder();

  // Appends one point. The caller keeps count() < kMaxChunkPoints. Cheap: it records the point
  // and its summary; all compression happens in Encode().
  void Append(int64_t step, int64_t time_ms, double value);
  int64_t count() const { return summary_.count; }
  bool full() const { return summary_.count >= kMaxChunkPoints; }
  const ChunkSummary& summary() const { return summary_; }
  // The encoded chunk (header + payload + CRC): a deterministic function of the appended points.
  // O(count()), cheap enough to call after every batch.
  std::string Encode() const;

 private:
  ChunkSummary summary_;
  // The points so far, kept raw so that Encode() can pick the best coding for the whole chunk.
  std::vector<int64_t> steps_;
  std::vector<int64_t> times_;
  std::vector<double> values_;
  bool all_integer_ = true;  // every value fits ValueMode::kInteger
  bool all_float32_ = true;  // every value is exactly a float32
};

// Steps through the points of encoded chunks in arrival order, one chunk after another, reusing
// its buffer (no allocation per chunk):
//
//   ChunkIterator it;
//   COHORT_RETURN_IF_ERROR(it.Reset(bytes));
//   while (it.Next()) Use(it.At());
//
// Reset checks the whole chunk (header, checksum, and that the payload holds exactly its points)
// and decodes it at once: a damaged chunk yields no point at all, never a prefix, and decoding
// the streams of a chunk in one pass each is what makes the codec fast. Next and At then step
// point by point; points() hands the decoded points to batch consumers (Bucketer::AddPoints).
// Single-threaded (external synchronisation).
class ChunkIterator {
 public:
  ChunkIterator();

  // Starts on `encoded` (not referenced after the call), before its first point. kCorruption on
  // a bad checksum, version or payload, leaving the iterator empty.
  Status Reset(std::string_view encoded);
  // Advances to the next point; false (and At() invalid) after the last.
  bool Next() { return ++next_ <= points_.size(); }
  // The current point; valid after a Next() that returned true.
  const Point& At() const { return points_[next_ - 1]; }
  // Position of the current point in the chunk (arrival order), from 0.
  size_t index() const { return next_ - 1; }
  // Every point of the chunk, in arrival order, whatever the position.
  const std::vector<Point>& points() const { return points_; }
  size_t size() const { return points_.size(); }

 private:
  std::vector<Point> points_;
  size_t next_ = 0;  // 1 + index of the current point; 0 before the first
};

// Every point of a chunk, in arrival order (a ChunkIterator's points()). kCorruption on a bad
// checksum, version or payload.
Result<std::vector<Point>> DecodeChunk(std::string_view encoded);

}  // namespace cohort::series
