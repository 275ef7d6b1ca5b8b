// Appending points to a stored series, independent of the storage engine.
//
// AppendToSeries fills a head chunk (the series' last chunk) up to kMaxChunkPoints and starts new
// chunks after it; with no head it just cuts points into full chunks. The stores no longer
// rewrite head chunks: they append per-batch tail chunks and compact them (series/tail.h), which
// calls AppendToSeries without a head. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "series/chunk.h"
#include "store/types.h"

namespace cohort::series {

struct StoredChunk {
  int64_t index = 0;  // position of the chunk in its series, 0-based
  std::string data;   // encoded chunk
};

struct ChunkWrite {
  int64_t index = 0;      // chunk position in the series
  bool replaces = false;  // true: overwrite the stored chunk at `index`; false: insert
  ChunkSummary summary;
  std::string data;
};

// Appends `points` (in order) after `head` (the series' last chunk, if any), filling the head
// up to kMaxChunkPoints and then starting new chunks. kCorruption when `head` is damaged.
Result<std::vector<ChunkWrite>> AppendToSeries(const std::optional<StoredChunk>& head,
                                               const std::vector<store::Point>& points);

}  // namespace cohort::series
