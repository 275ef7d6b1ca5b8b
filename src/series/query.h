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
#include "store/types.h"

namespace cohort::series {

struct ChunkMeta {
  int64_t id = 0;  // backend's handle for loading the chunk's bytes
  ChunkSummary summary;
};

// Loads the encoded bytes of a chunk by ChunkMeta::id.
using ChunkLoader = std::function<Result<std::string>(int64_t id)>;

// Answers `q` (step/time range, buckets or raw paging; keys/writers are the caller's business)
// for one series from the metadata of its chunks whose step range intersects the query range
// (the caller may pass all chunks of the series). Fills `out->points` (raw, sorted by step,
// stable for equal steps, at most q.limit, with out->more) or `out->buckets`.
// With buckets and no explicit step range, the range is the series' own [min_step, max_step].
Status QuerySeries(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load,
                   const store::HistoryQuery& q, store::SeriesData* out);

}  // namespace cohort::series
