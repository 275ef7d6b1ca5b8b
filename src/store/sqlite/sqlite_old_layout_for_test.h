// Test support for the re-cut (`cohort compact`, sqlite_recut.h): a store file rewritten into the
// chunk layout of builds before schema version 4. Used by sqlite_recut_test.cc and the fault
// test program tests/fault/old_layout_db.cc. Single-threaded.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "series/chunk.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/sqlite_summary_pages.h"
#include "store/store.h"

namespace cohort::store::sqlite {

// Rewrites every series of the store file at `path` as a build before schema version 4 wrote
// batches of `batch_rows` rows (each batch sealed at its own first step in chunks of up to
// kMaxChunkPoints points, so chunks straddle window edges; summaries bound as that build did),
// then pages the sealed chunks as the version-4 migration does (PageExistingChunks).
inline Status MakeOldLayout(const std::string& path, int64_t batch_rows) {
  COHORT_ASSIGN_OR_RETURN(auto db, Db::Open(path, SQLITE_OPEN_READWRITE, 5000));
  COHORT_ASSIGN_OR_RETURN(auto txn, Txn::Begin(db.get(), Txn::Mode::kWrite));
  std::vector<int64_t> series;
  {
    COHORT_ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT pk FROM series ORDER BY pk"));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      series.push_back(st.Int(0));
    }
  }
  for (int64_t pk : series) {
    std::vector<series::Point> points;
    {
      COHORT_ASSIGN_OR_RETURN(
          auto st, db->Prepare("SELECT data FROM chunks WHERE series_pk = ? ORDER BY idx"));
      st.Bind(pk);
      while (true) {
        COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
        if (!row) break;
        COHORT_ASSIGN_OR_RETURN(auto chunk, series::DecodeChunk(st.BlobView(0)));
        points.insert(points.end(), chunk.begin(), chunk.end());
      }
    }
    const std::string where = " WHERE series_pk = " + std::to_string(pk);
    COHORT_RETURN_IF_ERROR(db->Exec("DELETE FROM chunks" + where));
    COHORT_RETURN_IF_ERROR(db->Exec("DELETE FROM chunk_pages" + where));
    COHORT_ASSIGN_OR_RETURN(
        auto ins, db->Prepare("INSERT INTO chunks (count, min_step, max_step, min_time, "
                              "max_time, vmin, vmax, vsum, vfirst, vlast, nan_count, data, "
                              "series_pk, idx) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    int64_t idx = 0;
    for (size_t batch = 0; batch < points.size(); batch += batch_rows) {
      const size_t batch_end = std::min(points.size(), batch + size_t(batch_rows));
      for (size_t i = batch; i < batch_end; i += series::kMaxChunkPoints) {
        series::ChunkEncoder enc;
        for (size_t j = i; j < std::min(batch_end, i + series::kMaxChunkPoints); ++j) {
          enc.Append(points[j].step, points[j].time_ms, points[j].value);
        }
        const series::ChunkSummary& s = enc.summary();
        ins.Bind(s.count).Bind(s.min_step).Bind(s.max_step).Bind(s.min_time).Bind(s.max_time);
        ins.Bind(s.min).Bind(s.max).Bind(s.sum).Bind(s.first).Bind(s.last).Bind(s.nan_count);
        ins.BindBlob(enc.Encode()).Bind(pk).Bind(idx++);
        COHORT_RETURN_IF_ERROR(ins.Run());
        ins.Reset();
      }
    }
    const std::string n = std::to_string(idx);
    COHORT_RETURN_IF_ERROR(db->Exec("UPDATE series SET next_idx = " + n + ", tail_idx = " + n +
                                    ", tail_count = 0, tail_chunks = 0, paged_upto = 0 WHERE "
                                    "pk = " +
                                    std::to_string(pk)));
  }
  COHORT_RETURN_IF_ERROR(PageExistingChunks(db.get()));
  return txn.Commit();
}

}  // namespace cohort::store::sqlite
