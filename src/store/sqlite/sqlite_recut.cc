#include "store/sqlite/sqlite_recut.h"

#include <cstdio>
#include <string>
#include <vector>

#include "series/chunk.h"
#include "series/tail.h"
#include "store/sqlite/sqlite_chunk_rows.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store::sqlite {
namespace {

// The kMaxChunkPoints-step window that holds `step` (floor division).
int64_t WindowOf(int64_t step) {
  int64_t w = step / series::kMaxChunkPoints;
  if (step % series::kMaxChunkPoints < 0) --w;
  return w;
}

bool Straddles(int64_t count, int64_t min_step, int64_t max_step) {
  return count > 0 && WindowOf(min_step) != WindowOf(max_step);
}

// The SQL form of Straddles for CountStraddlingChunks (floor division for negative steps too).
constexpr const char* kWindowSql =
    "((%s - ((%s %% 1024 + 1024) %% 1024)) / 1024)";  // exact floor(step / 1024)

}  // namespace

Result<int64_t> CountStraddlingChunks(Db* db) {
  static_assert(series::kMaxChunkPoints == 1024, "kWindowSql divides by 1024");
  char lo[128], hi[128];
  std::snprintf(lo, sizeof lo, kWindowSql, "min_step", "min_step");
  std::snprintf(hi, sizeof hi, kWindowSql, "max_step", "max_step");
  return db->QueryInt(std::string("SELECT count(*) FROM chunks WHERE count > 0 AND ") + lo +
                      " <> " + hi);
}

Result<bool> RecutSeries(Db* db, int64_t series_pk, RecutCounts* counts) {
  int64_t next_idx = 0, tail_idx = 0;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("SELECT next_idx, tail_idx FROM series WHERE pk = ?"));
    st.Bind(series_pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return false;  // deleted meanwhile
    next_idx = st.Int(0);
    tail_idx = st.Int(1);
  }
  ++counts->series;

  // From the summaries alone: aligned sealed chunks (the layout of version 4) need nothing.
  int64_t straddling = 0;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("SELECT count, min_step, max_step FROM chunks INDEXED BY "
                                       "chunks_summary WHERE series_pk = ? AND idx < ?"));
    st.Bind(series_pk).Bind(tail_idx);
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      straddling += Straddles(st.Int(0), st.Int(1), st.Int(2));
    }
  }
  if (straddling == 0) return false;

  // Every point of the series in chunk (arrival) order.
  std::vector<series::Point> points;
  int64_t chunks_before = 0;
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("SELECT count, data FROM chunks WHERE series_pk = ? ORDER BY idx"));
    st.Bind(series_pk);
    series::ChunkIterator chunk;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      ++chunks_before;
      Status s = chunk.Reset(st.BlobView(1));
      if (!s.ok() || int64_t(chunk.size()) != st.Int(0)) {
        ++counts->series_damaged;
        return false;
      }
      points.insert(points.end(), chunk.points().begin(), chunk.points().end());
    }
  }

  const auto ranges = series::CutAligned(points, series::LastChunk::kCutAtAnyEdge);
  std::vector<series::ChunkWrite> writes;
  writes.reserve(ranges.size());
  int64_t straddling_after = 0;
  for (const auto& [first, end] : ranges) {
    series::ChunkEncoder enc;
    for (size_t i = first; i < end; ++i) {
      enc.Append(points[i].step, points[i].time_ms, points[i].value);
    }
    series::ChunkWrite w;
    w.index = next_idx + int64_t(writes.size());
    w.summary = enc.summary();
    w.data = enc.Encode();
    straddling_after += Straddles(w.summary.count, w.summary.min_step, w.summary.max_step);
    writes.push_back(std::move(w));
  }
  // Nothing gained (sparse steps straddle edges whatever the cut): leave the series alone, which
  // also makes a second re-cut a no-op.
  if (straddling_after >= straddling) return false;

  for (const char* sql :
       {"DELETE FROM chunks WHERE series_pk = ?", "DELETE FROM chunk_pages WHERE series_pk = ?"}) {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(sql));
    st.Bind(series_pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  std::vector<int64_t> pks;
  COHORT_RETURN_IF_ERROR(InsertChunks(db, series_pk, writes, &pks));
  COHORT_RETURN_IF_ERROR(AddToPages(db, series_pk, writes, pks));
  // All sealed and paged; the tail is empty. Indexes only grow (series/tail.h).
  const int64_t end_idx = next_idx + int64_t(writes.size());
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE series SET next_idx = ?, tail_idx = ?, tail_count = 0, "
                            "tail_chunks = 0, paged_upto = ? WHERE pk = ?"));
    st.Bind(end_idx).Bind(end_idx).Bind(end_idx).Bind(series_pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  ++counts->series_recut;
  counts->chunks_before += chunks_before;
  counts->chunks_after += int64_t(writes.size());
  counts->points += int64_t(points.size());
  counts->straddling_before += straddling;
  counts->straddling_after += straddling_after;
  return true;
}

Status RecutAllSeries(Db* db, const RecutProgress& progress, RecutCounts* counts) {
  std::vector<int64_t> todo;
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare("SELECT pk FROM series ORDER BY pk"));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      todo.push_back(st.Int(0));
    }
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    {
      COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
      COHORT_ASSIGN_OR_RETURN(bool changed, RecutSeries(db, todo[i], counts));
      if (changed) COHORT_RETURN_IF_ERROR(txn.Commit());
    }
    if (progress && !progress(int64_t(i + 1), int64_t(todo.size())) && i + 1 < todo.size()) {
      return Status::Unavailable("re-cut stopped after " + std::to_string(i + 1) + " of " +
                                 std::to_string(todo.size()) +
                                 " series; run it again to finish the rest");
    }
  }
  return Status::Ok();
}

}  // namespace cohort::store::sqlite
