// Chunk codec: the compressed block in which a series' points are stored (docs/formats.md).
//
// A chunk holds up to kMaxChunkPoints points (step, time_ms, value) of one series in arrival
// order: steps and times delta-of-delta + zigzag varint coded, values XOR-compressed
// (Gorilla). The encoded form carries a version byte, the point count and a CRC-32C, and every
// double round-trips bit for bit (NaN payloads, -0.0, infinities).
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
#include "store/types.h"

namespace cohort::series {

inline constexpr int kMaxChunkPoints = 4096;

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
};

class ChunkEncoder {
 public:
  ChunkEncoder();

  // Appends one point. The caller keeps count() < kMaxChunkPoints.
  void Append(int64_t step, int64_t time_ms, double value);
  int64_t count() const { return summary_.count; }
  bool full() const { return summary_.count >= kMaxChunkPoints; }
  const ChunkSummary& summary() const { return summary_; }
  // The encoded chunk (header + payload + CRC). Cheap enough to call after every batch.
  std::string Encode() const;
  // Rebuilds an encoder from an encoded chunk so that appending can continue.
  static Result<ChunkEncoder> Resume(std::string_view encoded);

 private:  // (the implementation may change these)
  ChunkSummary summary_;
  std::string steps_;   // delta-of-delta zigzag varints
  std::string times_;   // delta-of-delta zigzag varints
  std::string values_;  // Gorilla XOR bit stream
  int values_bits_ = 0; // bits used in values_
  int64_t prev_step_ = 0, prev_step_delta_ = 0;
  int64_t prev_time_ = 0, prev_time_delta_ = 0;
  uint64_t prev_value_ = 0;
  int prev_leading_ = -1, prev_trailing_ = 0;
};

// Decodes every point of a chunk, in arrival order. kCorruption on a bad checksum, version or
// truncated payload.
Result<std::vector<store::Point>> DecodeChunk(std::string_view encoded);

}  // namespace cohort::series
