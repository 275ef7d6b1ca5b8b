#include "store/sqlite/sqlite_chunk_rows.h"

namespace cohort::store::sqlite {
namespace {

constexpr char kInsertChunk[] =
    "INSERT INTO chunks (count, min_step, max_step, min_time, max_time, vmin, vmax, vsum, "
    "vfirst, vlast, nan_count, data, series_pk, idx) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?)";

}  // namespace

Status InsertChunks(Db* db, int64_t series_pk, const std::vector<series::ChunkWrite>& chunks,
                    std::vector<int64_t>* pks) {
  if (chunks.empty()) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached(kInsertChunk));
  pks->reserve(pks->size() + chunks.size());
  for (const series::ChunkWrite& w : chunks) {
    const series::ChunkSummary& s = w.summary;
    st.Bind(s.count).Bind(s.min_step).Bind(s.max_step).Bind(s.min_time).Bind(s.max_time);
    st.BindKeepingSign(s.min).BindKeepingSign(s.max).BindKeepingSign(s.sum);
    st.BindKeepingSign(s.first).BindKeepingSign(s.last).Bind(s.nan_count);
    st.BindBlob(w.data).Bind(series_pk).Bind(w.index);
    COHORT_RETURN_IF_ERROR(st.Run());
    st.Reset();
    pks->push_back(db->LastInsertRowid());
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
