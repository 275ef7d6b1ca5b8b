#include "series/tail.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

namespace cohort::series {
namespace {

// The window of kMaxChunkPoints steps that holds `step`, as an unsigned number that keeps the
// order of steps (floor division, then biased so that negative steps sort first).
uint64_t Window(int64_t step) {
  int64_t w = step / kMaxChunkPoints;
  if (step % kMaxChunkPoints < 0) --w;
  return uint64_t(w) ^ (uint64_t(1) << 63);
}

// How coarse the window edge crossed between two consecutive points is: the number of trailing
// zero bits of the coarsest window index in (a, b], i.e. the edge is a multiple of
// kMaxChunkPoints * 2^level steps. -1 when both points lie in one window.
int EdgeLevel(uint64_t a, uint64_t b) {
  if (a == b) return -1;
  return 63 - std::countl_zero(a ^ b);
}

}  // namespace

std::vector<std::pair<size_t, size_t>> CutAligned(const std::vector<Point>& points,
                                                  LastChunk last) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t n = points.size();
  size_t start = 0;
  while (start < n) {
    size_t end = std::min(n, start + size_t(kMaxChunkPoints));
    const bool full = end < n;
    // A full chunk whose next point starts a new window already ends on an edge.
    const bool aligned =
        full && EdgeLevel(Window(points[end - 1].step), Window(points[end].step)) >= 0;
    if (!aligned && (full || last != LastChunk::kKeep)) {
      // Cut at the coarsest window edge that leaves the chunk at least half full (latest among
      // equals), else at the latest edge; no edge: the chunk stays as it is.
      size_t best = 0, latest = 0;
      int best_level = -1;
      for (size_t j = start + 1; j < end; ++j) {
        const int level = EdgeLevel(Window(points[j - 1].step), Window(points[j].step));
        if (level < 0) continue;
        latest = j;
        if (j - start >= size_t(kMinSealedPoints) && level >= best_level) {
          best_level = level;
          best = j;
        }
      }
      if (best != 0) {
        end = best;
      } else if (latest != 0 && (full || last == LastChunk::kCutAtAnyEdge)) {
        end = latest;
      }
    }
    out.emplace_back(start, end);
    start = end;
  }
  return out;
}

int64_t TailChunkLimit(int64_t series_pk) {
  uint64_t x = uint64_t(series_pk) + 0x9e3779b97f4a7c15ULL;  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return kMinTailChunkLimit + int64_t(x % uint64_t(kMaxTailChunks - kMinTailChunkLimit + 1));
}

bool TailNeedsCompaction(const TailState& s, size_t new_points) {
  if (s.tail_count == 0 && s.tail_chunks == 0) return false;
  const int64_t chunk_limit = std::clamp(s.chunk_limit, int64_t{1}, kMaxTailChunks);
  return s.tail_count + int64_t(new_points) >= kMaxTailPoints || s.tail_chunks + 1 > chunk_limit;
}

void AbandonTail(TailState* s) {
  s->tail_idx = s->next_idx;
  s->tail_count = 0;
  s->tail_chunks = 0;
}

Result<TailAppend> PlanTailAppend(TailState* s, const std::vector<Point>& points,
                                  const std::vector<Point>* tail) {
  TailAppend out;
  if (points.empty()) return out;
  const bool compact = TailNeedsCompaction(*s, points.size());
  std::vector<Point> merged;
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
  const std::vector<Point>& all = compact ? merged : points;
  // What is sealed (series/tail.h): a compaction seals every chunk but the last (complete
  // windows) and the last one when it is full; a batch of kMinSealedPoints or more on an empty
  // tail seals all of its chunks (written once); other points join the tail, cut only into full
  // chunks (the tail is re-cut when it is compacted).
  const bool large = !compact && s->tail_count == 0 && s->tail_chunks == 0 &&
                     int64_t(all.size()) >= kMinSealedPoints;
  bool sealing = compact || large;
  const auto ranges = CutAligned(all, large     ? LastChunk::kCutAtAnyEdge
                                      : compact ? LastChunk::kCutAtHalf
                                                : LastChunk::kKeep);
  out.chunks.reserve(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) {
    ChunkEncoder enc;
    for (size_t i = ranges[r].first; i < ranges[r].second; ++i) {
      enc.Append(all[i].step, all[i].time_ms, all[i].value);
    }
    ChunkWrite w;
    w.index = s->next_idx++;
    w.summary = enc.summary();
    w.data = enc.Encode();
    const bool last = r + 1 == ranges.size();
    if (sealing && (large || !last || w.summary.count >= kMaxChunkPoints)) {
      s->tail_idx = s->next_idx;  // sealed: never rewritten
    } else {
      sealing = false;
      s->tail_count += w.summary.count;
      s->tail_chunks += 1;
    }
    out.chunks.push_back(std::move(w));
  }
  return out;
}

Result<TailAppend> PlanTailSeal(TailState* s, const std::vector<Point>& tail) {
  TailAppend out;
  if (s->tail_chunks == 0) return out;
  if (int64_t(tail.size()) != s->tail_count) {
    return Status::InvalidArgument("series tail: sealing needs the tail's " +
                                   std::to_string(s->tail_count) + " points, got " +
                                   std::to_string(tail.size()));
  }
  out.delete_lo = s->tail_idx;
  out.delete_hi = s->next_idx;
  const auto ranges = CutAligned(tail, LastChunk::kCutAtAnyEdge);
  out.chunks.reserve(ranges.size());
  for (const auto& [first, last] : ranges) {
    ChunkEncoder enc;
    for (size_t i = first; i < last; ++i) enc.Append(tail[i].step, tail[i].time_ms, tail[i].value);
    ChunkWrite w;
    w.index = s->next_idx++;
    w.summary = enc.summary();
    w.data = enc.Encode();
    out.chunks.push_back(std::move(w));
  }
  s->tail_idx = s->next_idx;
  s->tail_count = s->tail_chunks = 0;
  return out;
}

}  // namespace cohort::series
