#include "store/sql/sql_tail_seal.h"

#include <memory>

#include "series/chunk.h"

namespace cohort::store::sql {

Result<int64_t> SealWriterTails(Conn& conn, int64_t writer_pk, const AfterTailSealed& after) {
  int64_t deleted = 0;
  struct Tail {
    int64_t series_pk;
    series::TailState state;
  };
  std::vector<Tail> tails;
  {
    Params p;
    p.Add(writer_pk);
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        conn.Query("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks FROM series "
                   "WHERE writer_pk = $1 AND tail_chunks > 0 ORDER BY pk",
                   p));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      tails.push_back(
          {rows->Int(0), {rows->Int(1), rows->Int(2), rows->Int(3), rows->Int(4)}});
    }
  }
  std::vector<series::Point> points;
  for (Tail& t : tails) {
    points.clear();
    {
      Params p;
      p.Add(t.series_pk).Add(t.state.tail_idx);
      COHORT_ASSIGN_OR_RETURN(
          std::unique_ptr<Rows> rows,
          conn.Query("SELECT data FROM chunks WHERE series_pk = $1 AND idx >= $2 ORDER BY idx", p));
      while (true) {
        COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
        if (!row) break;
        COHORT_ASSIGN_OR_RETURN(std::vector<series::Point> chunk,
                                series::DecodeChunk(rows->Bytes(0)));
        points.insert(points.end(), chunk.begin(), chunk.end());
      }
    }
    const int64_t tail_idx_before = t.state.tail_idx;
    COHORT_ASSIGN_OR_RETURN(series::TailAppend plan, series::PlanTailSeal(&t.state, points));
    if (plan.delete_hi > plan.delete_lo) {
      Params p;
      p.Add(t.series_pk).Add(plan.delete_lo).Add(plan.delete_hi);
      COHORT_ASSIGN_OR_RETURN(
          const int64_t n,
          conn.Exec("DELETE FROM chunks WHERE series_pk = $1 AND idx >= $2 AND idx < $3", p));
      deleted += n;
    }
    for (const series::ChunkWrite& w : plan.chunks) {
      const series::ChunkSummary& s = w.summary;
      Params p;
      p.Add(t.series_pk).Add(w.index).Add(s.count).Add(s.min_step).Add(s.max_step);
      p.Add(s.min_time).Add(s.max_time).AddStored(s.min).AddStored(s.max).AddStored(s.sum);
      p.AddStored(s.first).AddStored(s.last).Add(s.nan_count).AddBlob(w.data);
      COHORT_RETURN_IF_ERROR(
          conn.Exec("INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, "
                    "max_time, vmin, vmax, vsum, vfirst, vlast, nan_count, data) VALUES ($1, $2, "
                    "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                    p)
              .status());
    }
    {
      Params p;
      p.Add(t.state.next_idx).Add(t.state.tail_idx).Add(t.state.tail_count);
      p.Add(t.state.tail_chunks).Add(t.series_pk);
      COHORT_RETURN_IF_ERROR(conn.Exec("UPDATE series SET next_idx = $1, tail_idx = $2, "
                                       "tail_count = $3, tail_chunks = $4 WHERE pk = $5",
                                       p)
                                 .status());
    }
    if (after) {
      COHORT_RETURN_IF_ERROR(after(conn, t.series_pk, tail_idx_before, t.state, plan.chunks));
    }
  }
  return deleted;
}

}  // namespace cohort::store::sql
