// Appending points to a stored series, independent of the storage engine.
//
// A series (run, key, writer) is a sequence of chunks; only its last chunk (the head) is ever
// rewritten, and only while it holds fewer than kMaxChunkPoints points. A backend loads the
// head, calls AppendToSeries, and writes back what it returns in the same transaction.
// Pure function; thread-safe.
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
