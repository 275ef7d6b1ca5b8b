// Series tail layout, shared by the stores: how a batch's points join a stored series without
// rewriting what is already stored (docs/formats.md, "Series layout in the stores").
//
// A series is sealed chunks (full ones, kMaxChunkPoints points, or large partial ones) followed
// by a tail of smaller chunks, one per batch. A batch appends a chunk of its own points to the
// tail instead of re-encoding a head chunk, so each point of a small batch is encoded about twice
// (in its batch's chunk and once more when the tail is compacted into full chunks) instead of
// once per batch that follows it. A batch that brings at least kMinSealedPoints points of a
// series while its tail is empty is written once, as sealed chunks. The tail is compacted when it
// would reach kMaxTailPoints points or kMaxTailChunks chunks; a compaction seals every chunk it
// writes but the last, which stays in the tail unless it is full. Chunk indexes only grow
// (compacted chunks get new ones), so index order stays arrival order, as series/query.h expects.
//
// Sealed chunks are cut at window edges: multiples of kMaxChunkPoints steps (coarser multiples,
// kMaxChunkPoints * 2^k, preferred when a full chunk of sparse steps spans several). For dense
// steps every sealed chunk then lies inside one kMaxChunkPoints-step window, wherever the
// writer's batches start and end, so a chunk-aligned bucket grid (series/aggregate.h) reads only
// summaries. A window may hold more than one chunk (a batch sealed in the middle of it).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "series/chunk.h"
#include "series/types.h"

namespace cohort::series {

// A tail is compacted when it would hold this many points, or this many chunks (tiny batches).
// Larger tails mean fewer, larger compactions (each point is re-encoded once either way) and a
// few more chunk summaries for queries to read.
inline constexpr int64_t kMaxTailPoints = 4 * kMaxChunkPoints;
inline constexpr int64_t kMaxTailChunks = 32;
// Series compact at different chunk counts, in [kMinTailChunkLimit, kMaxTailChunks] by series
// (TailChunkLimit): thousands of series fed one point per second from the same moment (a fleet of
// runs started together) would otherwise all compact in the same second, a stall of seconds for
// every writer behind the store's one write transaction.
inline constexpr int64_t kMinTailChunkLimit = kMaxTailChunks / 2;
// A batch of at least this many points of a series written while its tail is empty is sealed at
// once, all of its chunks: large batches are written once, never compacted.
inline constexpr int64_t kMinSealedPoints = kMaxChunkPoints / 2;

// The stored state of one series' chunk sequence (columns of the stores' series rows).
struct TailState {
  int64_t next_idx = 0;     // index of the next chunk written
  int64_t tail_idx = 0;     // first chunk of the tail (next_idx when the tail is empty)
  int64_t tail_count = 0;   // points in the tail
  int64_t tail_chunks = 0;  // chunks in the tail
  int64_t chunk_limit = kMaxTailChunks;  // compaction at this many chunks (TailChunkLimit)
};

// The tail chunk limit of the series with primary key `series_pk`: spread evenly over
// [kMinTailChunkLimit, kMaxTailChunks] by a hash of the key, the same on every call.
int64_t TailChunkLimit(int64_t series_pk);

// How CutAligned treats the last chunk, which is not full.
enum class LastChunk {
  kKeep,          // left whole (points joining a tail)
  kCutAtHalf,     // cut at the coarsest edge that leaves kMinSealedPoints before it, if any (a
                  // compaction: the part after the edge stays in the tail; sparse steps are
                  // not cut into many small sealed chunks)
  kCutAtAnyEdge,  // cut as a full chunk is (a large batch: every chunk is sealed)
};

// Cuts `points` (in order) into chunk ranges [first, second) of at most kMaxChunkPoints points:
// a full chunk ends at the coarsest window edge that leaves it at least kMinSealedPoints points
// (else the latest edge; none: where it is full); the last chunk as `last` says. Every point is
// in exactly one range; ranges are consecutive.
std::vector<std::pair<size_t, size_t>> CutAligned(const std::vector<Point>& points, LastChunk last);

// True when appending `new_points` points compacts the tail: the caller reads the points of the
// chunks [tail_idx, next_idx) and passes them to PlanTailAppend.
bool TailNeedsCompaction(const TailState& s, size_t new_points);

// Gives up the tail of `*s` as it is: its chunks stay where they are, taken as sealed chunks
// (reads skip a damaged one and name it), and an empty tail starts after them. What a store does
// when a tail chunk it must compact or seal does not decode (or the tail does not hold its
// count): the series goes on taking points and its writer can finish; only the damaged chunk's
// points are lost.
void AbandonTail(TailState* s);

// One encoded chunk for a store to insert at `index` of its series, with its summary.
struct ChunkWrite {
  int64_t index = 0;  // chunk position in the series
  ChunkSummary summary;
  std::string data;
};

// What a store writes for one append, in its transaction: first delete the chunks
// [delete_lo, delete_hi) (when delete_hi > delete_lo), then insert `chunks` (all new indexes).
struct TailAppend {
  int64_t delete_lo = 0, delete_hi = 0;
  std::vector<ChunkWrite> chunks;
};

// Plans appending `points` (in order) to the series in `*s` and advances `*s`. `tail` holds the
// tail's points when TailNeedsCompaction(*s, points.size()), else it is ignored (pass nullptr).
// kInvalidArgument when compaction is due and `tail` is missing or does not hold tail_count
// points.
Result<TailAppend> PlanTailAppend(TailState* s, const std::vector<Point>& points,
                                  const std::vector<Point>* tail);

// Plans sealing the whole tail of the series in `*s` (its points, in order, in `tail`) when its
// writer finishes: the tail's chunks are re-cut as a large batch is (every chunk at window edges,
// all sealed) and `*s` is left with an empty tail. A finished writer's series then keeps no small
// chunks, whose summaries and headers cost more than their points. Nothing to do (no chunks in
// the plan) when the tail is empty; a tail of one chunk is rewritten too (cut at window edges,
// under a new index, so that the store's summary pages can take it). kInvalidArgument when
// `tail` does not hold tail_count points.
Result<TailAppend> PlanTailSeal(TailState* s, const std::vector<Point>& tail);

}  // namespace cohort::series
