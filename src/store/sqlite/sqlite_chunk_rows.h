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

// Seals the tails of every series of the writer `writer_pk` (series::PlanTailSeal: re-cut at
// window edges, sealed, paged): run when the writer finishes, in the finishing transaction. The
// series rows' tail columns are updated; query answers do not change.
Status SealWriterTails(Db* db, int64_t writer_pk);

// The summary of the current row of `st`, whose columns from `col` on are, in this order:
// count, min_step, max_step, min_time, max_time, vmin, vmax, vsum, vfirst, vlast, nan_count.
series::ChunkSummary ReadChunkSummary(const Stmt& st, int col);

}  // namespace cohort::store::sqlite
