// Summary pages of the SQLite store: the summaries of a series' sealed chunks
// packed kChunksPerPage to a row of `chunk_pages`, so that a bucketed query over a long series
// reads a few dozen rows instead of one index entry per chunk (docs/formats.md, "Series layout
// in the stores").
//
// series.paged_upto is the invariant: every chunk of the series with idx < paged_upto is in a
// page, and nothing at or above it is. Sealed chunks are never rewritten, so a page changes only
// when chunks are sealed after the paged prefix. Series imported from a dump start with
// paged_upto = 0 and are read from `chunks` alone until FinishImport pages them.
//
// Functions run on the caller's connection, inside its transaction; not thread-safe beyond that.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/status.h"
#include "series/query.h"
#include "series/tail.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

inline constexpr int64_t kChunksPerPage = 32;

// Adds the sealed chunks `sealed` (consecutive indexes, the first one == the series'
// paged_upto, their rowids in `pks`) to the series' pages.
Status AddToPages(Db* db, int64_t series_pk, const std::vector<series::ChunkWrite>& sealed,
                  const std::vector<int64_t>& pks);

// Adds the chunks of the series `series_pk` with from_idx <= idx < upto_idx, read from their
// rows, to its pages (from_idx == paged_upto); the caller moves paged_upto to upto_idx. Used for
// chunks that were stored before they could be paged: imported ones, and a damaged tail given up
// as sealed chunks (series::AbandonTail).
Status PageChunks(Db* db, int64_t series_pk, int64_t from_idx, int64_t upto_idx);

// Pages the sealed chunks (idx < tail_idx) of every series that has none paged yet (imported
// from a dump): run by FinishImport, in its transaction.
Status PageImportedChunks(Db* db);

// Appends to `*out` the paged chunks of the series with idx < paged_upto whose summaries meet the
// step range [lo, hi] and time range [tlo, thi], in idx order. kCorruption for a malformed page.
Status ReadPages(Db* db, int64_t series_pk, int64_t paged_upto, int64_t lo, int64_t hi, int64_t tlo,
                 int64_t thi, std::vector<series::ChunkMeta>* out);

}  // namespace cohort::store::sqlite
