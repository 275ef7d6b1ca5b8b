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

Status PageSealedTail(Db* db, int64_t series_pk, int64_t tail_idx_before,
                      const series::TailState& after,
                      const std::vector<series::ChunkWrite>& sealed) {
  const bool abandoned = sealed.empty() && after.tail_idx > tail_idx_before;
  if (sealed.empty() && !abandoned) return Status::Ok();
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("SELECT paged_upto FROM series WHERE pk = ?"));
    st.Bind(series_pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row || st.Int(0) != tail_idx_before) return Status::Ok();
  }
  if (abandoned) {  // a damaged tail kept as sealed chunks (series::AbandonTail): paged as stored
    COHORT_RETURN_IF_ERROR(PageChunks(db, series_pk, tail_idx_before, after.tail_idx));
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE series SET paged_upto = ? WHERE pk = ?"));
    st.Bind(after.tail_idx).Bind(series_pk);
    return st.Run();
  }
  std::vector<int64_t> pks;
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("SELECT pk FROM chunks WHERE series_pk = ? AND idx >= ? ORDER BY idx"));
    st.Bind(series_pk).Bind(sealed.front().index);
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      pks.push_back(st.Int(0));
    }
  }
  if (pks.size() != sealed.size()) {
    return Status::Internal("sealing a tail: the sealed chunks were not found");
  }
  COHORT_RETURN_IF_ERROR(AddToPages(db, series_pk, sealed, pks));
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("UPDATE series SET paged_upto = ? WHERE pk = ?"));
  st.Bind(after.tail_idx).Bind(series_pk);
  return st.Run();
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
