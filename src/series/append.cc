#include "series/append.h"

#include <utility>

namespace cohort::series {

Result<std::vector<ChunkWrite>> AppendToSeries(const std::optional<StoredChunk>& head,
                                               const std::vector<store::Point>& points) {
  std::vector<ChunkWrite> writes;
  if (points.empty()) return writes;

  ChunkEncoder enc;
  int64_t index = 0;
  bool replaces = false;
  if (head.has_value()) {
    COHORT_ASSIGN_OR_RETURN(ChunkEncoder resumed, ChunkEncoder::Resume(head->data));
    if (resumed.full()) {
      index = head->index + 1;
    } else {
      enc = std::move(resumed);
      index = head->index;
      replaces = true;
    }
  }
  auto flush = [&] {
    ChunkWrite w;
    w.index = index;
    w.replaces = replaces;
    w.summary = enc.summary();
    w.data = enc.Encode();
    writes.push_back(std::move(w));
    ++index;
    replaces = false;
    enc = ChunkEncoder();
  };
  for (const store::Point& p : points) {
    if (enc.full()) flush();
    enc.Append(p.step, p.time_ms, p.value);
  }
  flush();
  return writes;
}

}  // namespace cohort::series
