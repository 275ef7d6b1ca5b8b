#include "store/sqlite/sqlite_chunk_rows.h"

#include <algorithm>
#include <string>

#include "series/tail.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store::sqlite {
namespace {

constexpr char kInsertChunk[] =
    "INSERT INTO chunks (count, min_step, max_step, min_time, max_time, vmin, vmax, vsum, "
    "vfirst, vlast, nan_count, data, series_pk, idx) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?)";

// Rows per statement of InsertChunkRows: 14 parameters each, well below SQLite's limit.
constexpr size_t kRowsPerInsert = 16;

// kInsertChunk with `rows` rows of values.
std::string MultiRowInsert(size_t rows) {
  std::string sql = kInsertChunk;
  for (size_t i = 1; i < rows; ++i) sql += ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  return sql;
}

void BindChunk(Stmt& st, int64_t series_pk, const series::ChunkWrite& w) {
  const series::ChunkSummary& s = w.summary;
  st.Bind(s.count).Bind(s.min_step).Bind(s.max_step).Bind(s.min_time).Bind(s.max_time);
  st.BindKeepingSign(s.min).BindKeepingSign(s.max).BindKeepingSign(s.sum);
  st.BindKeepingSign(s.first).BindKeepingSign(s.last).Bind(s.nan_count);
  st.BindBlob(w.data).Bind(series_pk).Bind(w.index);
}

}  // namespace

Status InsertChunkRows(Db* db, const std::vector<ChunkRow>& rows) {
  static const std::vector<std::string> sqls = [] {
    std::vector<std::string> out(kRowsPerInsert + 1);
    for (size_t n = 1; n <= kRowsPerInsert; ++n) out[n] = MultiRowInsert(n);
    return out;
  }();
  for (size_t i = 0; i < rows.size(); i += kRowsPerInsert) {
    const size_t n = std::min(kRowsPerInsert, rows.size() - i);
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(sqls[n]));
    for (size_t j = i; j < i + n; ++j) BindChunk(st, rows[j].series_pk, rows[j].chunk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  return Status::Ok();
}

Status InsertChunks(Db* db, int64_t series_pk, const std::vector<series::ChunkWrite>& chunks,
                    std::vector<int64_t>* pks) {
  if (chunks.empty()) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kInsertChunk));
  pks->reserve(pks->size() + chunks.size());
  for (const series::ChunkWrite& w : chunks) {
    BindChunk(st, series_pk, w);
    COHORT_RETURN_IF_ERROR(st.Run());
    st.Reset();
    pks->push_back(db->LastInsertRowid());
  }
  return Status::Ok();
}

Status SealWriterTails(Db* db, int64_t writer_pk) {
  struct Tail {
    int64_t series_pk, paged_upto;
    series::TailState state;
  };
  std::vector<Tail> tails;
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks, paged_upto "
                            "FROM series WHERE writer_pk = ? AND tail_chunks > 0"));
    st.Bind(writer_pk);
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      tails.push_back({st.Int(0), st.Int(5), {st.Int(1), st.Int(2), st.Int(3), st.Int(4)}});
    }
  }
  std::vector<series::Point> points;
  for (Tail& t : tails) {
    points.clear();
    {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st,
          db->Cached("SELECT data FROM chunks WHERE series_pk = ? AND idx >= ? ORDER BY idx"));
      st.Bind(t.series_pk).Bind(t.state.tail_idx);
      while (true) {
        COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
        if (!row) break;
        COHORT_ASSIGN_OR_RETURN(std::vector<series::Point> chunk, series::DecodeChunk(st.BlobView(0)));
        points.insert(points.end(), chunk.begin(), chunk.end());
      }
    }
    // Every chunk before the tail is paged (or none is, for series written before pages): the
    // sealed chunks then continue the pages.
    const bool pageable = t.paged_upto == t.state.tail_idx;
    COHORT_ASSIGN_OR_RETURN(series::TailAppend plan, series::PlanTailSeal(&t.state, points));
    {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st, db->Cached("DELETE FROM chunks WHERE series_pk = ? AND idx >= ? AND idx < ?"));
      st.Bind(t.series_pk).Bind(plan.delete_lo).Bind(plan.delete_hi);
      COHORT_RETURN_IF_ERROR(st.Run());
    }
    std::vector<int64_t> pks;
    COHORT_RETURN_IF_ERROR(InsertChunks(db, t.series_pk, plan.chunks, &pks));
    if (pageable) {
      COHORT_RETURN_IF_ERROR(AddToPages(db, t.series_pk, plan.chunks, pks));
      t.paged_upto = t.state.tail_idx;
    }
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("UPDATE series SET next_idx = ?, tail_idx = ?, tail_count = ?, "
                            "tail_chunks = ?, paged_upto = ? WHERE pk = ?"));
    st.Bind(t.state.next_idx).Bind(t.state.tail_idx).Bind(t.state.tail_count);
    st.Bind(t.state.tail_chunks).Bind(t.paged_upto).Bind(t.series_pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  return Status::Ok();
}

series::ChunkSummary ReadChunkSummary(const Stmt& st, int col) {
  series::ChunkSummary s;
  s.count = st.Int(col);
  s.min_step = st.Int(col + 1);
  s.max_step = st.Int(col + 2);
  s.min_time = st.Int(col + 3);
  s.max_time = st.Int(col + 4);
  s.min = st.Double(col + 5);
  s.max = st.Double(col + 6);
  s.sum = st.Double(col + 7);
  s.first = st.Double(col + 8);
  s.last = st.Double(col + 9);
  s.nan_count = st.Int(col + 10);
  return s;
}

}  // namespace cohort::store::sqlite
