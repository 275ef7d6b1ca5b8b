#include "series/tail.h"

#include <string>
#include <utility>

namespace cohort::series {

bool TailNeedsCompaction(const TailState& s, size_t new_points) {
  if (s.tail_count == 0 && s.tail_chunks == 0) return false;
  return s.tail_count + int64_t(new_points) >= kMaxTailPoints || s.tail_chunks + 1 > kMaxTailChunks;
}

Result<TailAppend> PlanTailAppend(TailState* s, const std::vector<store::Point>& points,
                                  const std::vector<store::Point>* tail) {
  TailAppend out;
  if (points.empty()) return out;
  const bool compact = TailNeedsCompaction(*s, points.size());
  std::vector<store::Point> merged;
  if (compact) {
    if (tail == nullptr || int64_t(tail->size()) != s->tail_count) {
      return Status::InvalidArgument(
          "series tail: compaction needs the tail's " + std::to_string(s->tail_count) +
          " points, got " + (tail == nullptr ? std::string("none") : std::to_string(tail->size())));
    }
    merged.reserve(tail->size() + points.size());
    merged = *tail;
    merged.insert(merged.end(), points.begin(), points.end());
    out.delete_lo = s->tail_idx;
    out.delete_hi = s->next_idx;
    s->tail_idx = s->next_idx;
    s->tail_count = s->tail_chunks = 0;
  }
  COHORT_ASSIGN_OR_RETURN(out.chunks, AppendToSeries(std::nullopt, compact ? merged : points));
  for (ChunkWrite& w : out.chunks) {
    w.index = s->next_idx++;
    w.replaces = false;
    if (s->tail_count == 0 && w.summary.count >= kMinSealedPoints) {
      s->tail_idx = s->next_idx;  // sealed: never rewritten
    } else {
      s->tail_count += w.summary.count;
      s->tail_chunks += 1;
    }
  }
  return out;
}

}  // namespace cohort::series
