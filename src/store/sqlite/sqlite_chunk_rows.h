// Rows of the SQLite store's `chunks` table (docs/formats.md, "Series layout in the stores"):
// the one place that writes a chunk row and reads a chunk's summary columns back, for ingest and
// the summary pages.
//
// Functions run on the caller's connection, inside its transaction; not thread-safe beyond that.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/status.h"
#include "series/chunk.h"
#include "series/tail.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

// Inserts `chunks` (in order) as rows of the series `series_pk`; their rowids in `*pks` (same
// order). Summary values keep their bits (-0.0: Stmt::BindKeepingSign).
Status InsertChunks(Db* db, int64_t series_pk, const std::vector<series::ChunkWrite>& chunks,
                    std::vector<int64_t>* pks);

// A chunk row of some series, for InsertChunkRows.
struct ChunkRow {
  int64_t series_pk = 0;
  series::ChunkWrite chunk;
};

// Inserts `rows` (of any series; rowids not needed), several per statement: fewer statements
// than InsertChunks for a batch's tail chunks, one per series.
Status InsertChunkRows(Db* db, const std::vector<ChunkRow>& rows);

// Adds the chunks `sealed` (in order, consecutive new indexes) that sealed the tail of the
// series `series_pk` (from chunk `tail_idx_before` on; the series row now at `after`) to its
// summary pages when every chunk before the tail is paged (none is, for series written before
// pages: those stay unpaged), and moves paged_upto past them: SQLite's part of sealing a
// finished writer's tails (sql/sql_tail_seal.h, the hook run after each series).
Status PageSealedTail(Db* db, int64_t series_pk, int64_t tail_idx_before,
                      const series::TailState& after,
                      const std::vector<series::ChunkWrite>& sealed);

// The summary of the current row of `st`, whose columns from `col` on are, in this order:
// count, min_step, max_step, min_time, max_time, vmin, vmax, vsum, vfirst, vlast, nan_count.
series::ChunkSummary ReadChunkSummary(const Stmt& st, int col);

}  // namespace cohort::store::sqlite
