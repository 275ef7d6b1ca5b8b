#include "series/query.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "series/bucketer.h"

namespace cohort::series {
namespace {

constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

struct Range {
  int64_t min_step, max_step, min_time, max_time;
};

bool Overlaps(const ChunkSummary& s, const Range& r) {
  return s.count > 0 && s.max_step >= r.min_step && s.min_step <= r.max_step &&
         s.max_time >= r.min_time && s.min_time <= r.max_time;
}

// Loads one chunk into `*it`, checking it against its summary. A chunk that does not decode
// (bad checksum, damaged payload, wrong point count) is recorded in `out->damaged` and false is
// returned: the caller skips it. The loader's errors are returned.
Result<bool> LoadChunk(const ChunkMeta& c, const ChunkLoader& load, ChunkIterator* it,
                       SeriesResult* out) {
  COHORT_ASSIGN_OR_RETURN(std::string data, load(c.id));
  Status s = it->Reset(data);
  std::string reason;
  if (!s.ok()) {
    reason = s.message();
  } else if (int64_t(it->size()) != c.summary.count) {
    reason = "holds " + std::to_string(it->size()) + " points, its summary says " +
             std::to_string(c.summary.count);
  }
  if (reason.empty()) return true;
  out->damaged.push_back(
      DamagedChunk{c.summary.min_step, c.summary.max_step, c.summary.count, std::move(reason)});
  return false;
}

// The lowest and highest steps (min_step > max_step: none) of the points a bucketed query's grid
// spans when it names no step range: the series' (every chunk given), or with a time range the
// points inside it, read exactly: the chunks a store passes are those overlapping the time range,
// and their step ranges depended on how the points were cut into chunks (a time-filtered chart
// moved its buckets when a writer's tails were sealed). Chunks cut by the time range are decoded.
// The chunks it decodes are kept in `*loaded` for the bucketing pass (each is read once).
Result<Range> StepsOfPointsIn(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load,
                              const SeriesQuery& q, const Range& r,
                              std::unordered_map<int64_t, std::string>* loaded) {
  Range steps{kMaxInt, kMinInt, 0, 0};
  if (q.min_step && q.max_step) return Range{*q.min_step, *q.max_step, 0, 0};
  const bool timed = q.min_time_ms || q.max_time_ms;
  ChunkIterator it;
  for (const ChunkMeta& c : chunks) {
    const ChunkSummary& s = c.summary;
    if (s.count == 0) continue;
    if (!timed || (s.min_time >= r.min_time && s.max_time <= r.max_time)) {
      steps.min_step = std::min(steps.min_step, s.min_step);
      steps.max_step = std::max(steps.max_step, s.max_step);
      continue;
    }
    if (s.max_time < r.min_time || s.min_time > r.max_time) continue;
    if (s.min_step >= steps.min_step && s.max_step <= steps.max_step) continue;  // adds nothing
    COHORT_ASSIGN_OR_RETURN(std::string data, load(c.id));
    if (it.Reset(data).ok() && int64_t(it.size()) == s.count) {
      for (size_t i = 0; i < it.size(); ++i) {
        const Point& p = it.points()[i];
        if (p.time_ms < r.min_time || p.time_ms > r.max_time) continue;
        steps.min_step = std::min(steps.min_step, p.step);
        steps.max_step = std::max(steps.max_step, p.step);
      }
    } else {
      // Damaged: its summary's steps, so that the pass that buckets the points meets it and
      // names it (once) instead of leaving it out of a grid that stops short of it.
      steps.min_step = std::min(steps.min_step, s.min_step);
      steps.max_step = std::max(steps.max_step, s.max_step);
    }
    (*loaded)[c.id] = std::move(data);
  }
  return steps;
}

Status QueryBuckets(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load,
                    const SeriesQuery& q, Range r, SeriesResult* out) {
  if (q.buckets > kMaxQueryBuckets) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxQueryBuckets) + " buckets");
  }
  std::unordered_map<int64_t, std::string> decoded;
  COHORT_ASSIGN_OR_RETURN(const Range steps, StepsOfPointsIn(chunks, load, q, r, &decoded));
  const ChunkLoader load_once = [&](int64_t id) -> Result<std::string> {
    auto at = decoded.find(id);
    if (at == decoded.end()) return load(id);
    std::string data = std::move(at->second);
    decoded.erase(at);
    return data;
  };
  if (steps.min_step > steps.max_step) return Status::Ok();  // no points at all
  r.min_step = q.min_step.value_or(steps.min_step);
  r.max_step = q.max_step.value_or(steps.max_step);
  if (r.min_step > r.max_step || r.min_time > r.max_time) return Status::Ok();

  Bucketer bucketer(r.min_step, r.max_step, q.buckets);
  ChunkIterator it;
  for (const ChunkMeta& c : chunks) {
    const ChunkSummary& s = c.summary;
    if (!Overlaps(s, r)) continue;
    if (s.min_time >= r.min_time && s.max_time <= r.max_time && bucketer.FitsOneBucket(s)) {
      bucketer.AddSummary(s);
      continue;
    }
    COHORT_ASSIGN_OR_RETURN(const bool loaded, LoadChunk(c, load_once, &it, out));
    if (loaded) bucketer.AddPoints(it.points().data(), it.size(), r.min_time, r.max_time);
  }
  out->buckets = bucketer.Finish();
  return Status::Ok();
}

// A point with its arrival position, for a stable order across chunks.
struct Arrival {
  Point p;
  uint32_t chunk;  // index in `chunks`
  uint32_t pos;    // index in the chunk
};

bool ArrivalLess(const Arrival& a, const Arrival& b) {
  if (a.p.step != b.p.step) return a.p.step < b.p.step;
  if (a.chunk != b.chunk) return a.chunk < b.chunk;
  return a.pos < b.pos;
}

// Where a page of `n` points sorted by step (`step_at(i)`) ends: at most `limit` points unless
// more than `limit` share the first step, and never between two points of equal step.
template <typename StepAt>
size_t PageEnd(size_t n, size_t limit, const StepAt& step_at) {
  size_t end = std::min(limit, n);
  if (end < n && step_at(end - 1) == step_at(end)) {
    // The page would split the points of one step; the cursor could not resume inside them.
    const int64_t step = step_at(end);
    size_t group = end;
    while (group > 0 && step_at(group - 1) == step) --group;
    if (group > 0) {
      end = group;
    } else {
      while (end < n && step_at(end) == step) ++end;
    }
  }
  return end;
}

// QueryRaw for chunks (`order`, by lowest step) whose step ranges do not overlap: points go
// straight into the answer, chunk after chunk, with no merge (stably sorted within a chunk when
// its steps are not in order).
Status QueryRawDisjoint(const std::vector<ChunkMeta>& chunks, const std::vector<uint32_t>& order,
                        const ChunkLoader& load, const Range& r, size_t limit, SeriesResult* out) {
  std::vector<Point>& held = out->points;
  // Room for every point of the chunks read (at most one chunk past the limit), reserved once:
  // growing a 100k-point answer by doubling copies it and touches twice the memory.
  size_t room = 0;
  for (uint32_t ci : order) {
    if (room > limit) break;
    room += size_t(std::max<int64_t>(chunks[ci].summary.count, 0));
  }
  held.reserve(std::min(room, limit + size_t(kMaxChunkPoints)));  // a summary may be damaged
  ChunkIterator it;
  bool stopped_early = false;
  for (uint32_t ci : order) {
    if (held.size() > limit) {  // every unread chunk lies above every held point
      stopped_early = true;
      break;
    }
    COHORT_ASSIGN_OR_RETURN(const bool loaded, LoadChunk(chunks[ci], load, &it, out));
    if (!loaded) continue;
    const size_t first = held.size();
    const ChunkSummary& s = chunks[ci].summary;
    if (s.min_step >= r.min_step && s.max_step <= r.max_step && s.min_time >= r.min_time &&
        s.max_time <= r.max_time) {
      held.insert(held.end(), it.points().begin(), it.points().end());
    } else {
      while (it.Next()) {
        const Point& p = it.At();
        if (p.step < r.min_step || p.step > r.max_step || p.time_ms < r.min_time ||
            p.time_ms > r.max_time) {
          continue;
        }
        held.push_back(p);
      }
    }
    auto by_step = [](const Point& a, const Point& b) { return a.step < b.step; };
    if (!std::is_sorted(held.begin() + long(first), held.end(), by_step)) {
      std::stable_sort(held.begin() + long(first), held.end(), by_step);
    }
  }
  const size_t end = PageEnd(held.size(), limit, [&](size_t i) { return held[i].step; });
  out->more = end < held.size() || stopped_early;
  held.resize(end);
  return Status::Ok();
}

Status QueryRaw(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load, const SeriesQuery& q,
                Range r, SeriesResult* out) {
  if (q.limit < 1) return Status::InvalidArgument("limit must be at least 1");
  if (q.after_step == kMaxInt) return Status::Ok();
  r.min_step = std::max(q.min_step.value_or(kMinInt), q.after_step + 1);
  r.max_step = q.max_step.value_or(kMaxInt);
  if (r.min_step > r.max_step || r.min_time > r.max_time) return Status::Ok();
  const size_t limit = size_t(std::min<int64_t>(q.limit, int64_t(1) << 40));

  // Visit chunks by their lowest step, so that (for the usual disjoint chunks) reading can stop
  // once more than `limit` points are held below every unread chunk.
  std::vector<uint32_t> order;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (Overlaps(chunks[i].summary, r)) order.push_back(uint32_t(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return chunks[a].summary.min_step < chunks[b].summary.min_step;
  });
  bool disjoint = true;  // the usual layout: each chunk's steps above the previous chunk's
  for (size_t k = 1; k < order.size() && disjoint; ++k) {
    disjoint = chunks[order[k]].summary.min_step > chunks[order[k - 1]].summary.max_step;
  }
  if (disjoint) return QueryRawDisjoint(chunks, order, load, r, limit, out);

  std::vector<Arrival> held;
  ChunkIterator it;
  int64_t held_max = kMinInt;
  bool stopped_early = false;
  for (uint32_t ci : order) {
    if (held.size() > limit && held_max < chunks[ci].summary.min_step) {
      stopped_early = true;
      break;
    }
    COHORT_ASSIGN_OR_RETURN(const bool loaded, LoadChunk(chunks[ci], load, &it, out));
    if (!loaded) continue;
    while (it.Next()) {
      const Point& p = it.At();
      if (p.step < r.min_step || p.step > r.max_step || p.time_ms < r.min_time ||
          p.time_ms > r.max_time) {
        continue;
      }
      held.push_back({p, ci, uint32_t(it.index())});
      held_max = std::max(held_max, p.step);
    }
  }
  if (!std::is_sorted(held.begin(), held.end(), ArrivalLess)) {
    std::sort(held.begin(), held.end(), ArrivalLess);  // keys are unique: a stable order
  }

  const size_t end = PageEnd(held.size(), limit, [&](size_t i) { return held[i].p.step; });
  out->points.reserve(end);
  for (size_t i = 0; i < end; ++i) out->points.push_back(held[i].p);
  out->more = end < held.size() || stopped_early;
  return Status::Ok();
}

// Keeps the last of each run of equal steps (points sorted by step, equal steps in arrival
// order). A page never ends inside such a run (PageEnd), so each page keeps the right point.
void KeepLatestPerStep(std::vector<Point>* points) {
  size_t kept = 0;
  for (size_t i = 0; i < points->size(); ++i) {
    if (kept > 0 && (*points)[kept - 1].step == (*points)[i].step) {
      (*points)[kept - 1] = (*points)[i];
    } else {
      (*points)[kept++] = (*points)[i];
    }
  }
  points->resize(kept);
}

}  // namespace

Status QuerySeries(const std::vector<ChunkMeta>& chunks, const ChunkLoader& load,
                   const SeriesQuery& q, SeriesResult* out) {
  out->points.clear();
  out->buckets.clear();
  out->damaged.clear();
  out->more = false;
  const Range r{kMinInt, kMaxInt, q.min_time_ms.value_or(kMinInt), q.max_time_ms.value_or(kMaxInt)};
  if (q.buckets > 0) return QueryBuckets(chunks, load, q, r, out);
  COHORT_RETURN_IF_ERROR(QueryRaw(chunks, load, q, r, out));
  if (q.latest_per_step) KeepLatestPerStep(&out->points);
  return Status::Ok();
}

Result<ChunkRange> ChunkRangeOf(const SeriesQuery& q) {
  if (q.buckets < 0) return Status::InvalidArgument("history: buckets must be >= 0");
  if (q.buckets == 0 && q.limit <= 0) return Status::InvalidArgument("history: limit must be > 0");
  ChunkRange r;
  r.min_step = q.min_step.value_or(kMinStep);
  if (q.buckets == 0 && q.after_step != kMinStep) {
    r.min_step = std::max(r.min_step, q.after_step == kMaxStep ? kMaxStep : q.after_step + 1);
  }
  r.max_step = q.max_step.value_or(kMaxStep);
  r.min_time = q.min_time_ms.value_or(kMinStep);
  r.max_time = q.max_time_ms.value_or(kMaxStep);
  return r;
}

}  // namespace cohort::series
