// Reading a stored series for a history query, independent of the storage engine: chooses
// between chunk summaries and decoded points, buckets, and pages raw points.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "series/chunk.h"
#include "series/types.h"

namespace cohort::series {

struct ChunkMeta {
  int64_t id = 0;  // backend's handle for loading the chunk's bytes
  ChunkSummary summary;
};

// Loads the encoded bytes of a chunk by ChunkMeta::id.
using ChunkLoader = std::function<Result<std::string>(int64_t id)>;

// Largest SeriesQuery::buckets QuerySeries accepts (bucket memory is O(buckets)).
inline constexpr int kMaxQueryBuckets = 100000;

// Answers `q` (step/time range, buckets or raw paging) for one series from the metadata of its
// chunks whose step range intersects the query range (the caller may pass all chunks of the
// series), given in series order (chunk index order, which is arrival order). Fills
// `out->points` (raw, sorted by step, stable for equal steps, at most q.limit, with out->more)
// or `out->buckets`, and clears the other.
// With buckets and no explicit step range, the range is the series' own [min_step, max_step], or
// with a time range that of its points inside it (chunks the time range cuts are decoded for it).
// Time filters apply to points; a chunk's summary stands in for its points only when the chunk
// lies inside the time range and within one bucket, so buckets mode loads only the chunks that
// straddle a bucket or time boundary.
// Raw paging: a page never ends between two points of equal step (the cursor, after_step, is a
// step), so successive pages with after_step = last step return every point exactly once
// (steps > after_step only: a step of INT64_MIN, which stores never hold, is never returned). The
// one exception to "at most q.limit": when more than q.limit points share the page's first step,
// the page holds all of them. kInvalidArgument for q.limit < 1 or q.buckets > kMaxQueryBuckets;
// the loader's errors are passed on. A chunk that fails its checksum or does not decode to its
// summary's point count is skipped and named in out->damaged; the rest is answered.
Status QuerySeries(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load,
                   const SeriesQuery& q, SeriesResult* out);

// The part of a series that `q` reads (inclusive): a store selects the chunks whose step and time
// ranges meet it and hands them to QuerySeries (no other chunk can hold a point of the answer).
struct ChunkRange {
  int64_t min_step = kMinStep, max_step = kMaxStep, min_time = kMinStep, max_time = kMaxStep;
};
// kInvalidArgument, naming the field, for buckets < 0 or, when paging raw points, limit < 1.
Result<ChunkRange> ChunkRangeOf(const SeriesQuery& q);

}  // namespace cohort::series
