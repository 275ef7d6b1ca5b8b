// Re-cutting the chunks of series written before schema version 4 (`cohort compact`).
//
// Before version 4 a batch of kMinSealedPoints or more points was sealed at its own first step,
// so chunks of data logged in large batches straddle the kMaxChunkPoints-step windows that
// chunk-aligned bucket grids use, and a bucketed query decodes nearly every chunk instead of
// reading summaries (docs/benchmarks.md: 49x over the chart target). The version-4 migration
// only pages those chunks; this rewrites them. A series is re-cut when cutting all of its points
// anew at window edges (series::CutAligned, as large batches are cut today) leaves fewer chunks
// straddling a window edge than its sealed chunks have now; data written by version 4 or later,
// whose dense chunks already lie inside one window each, is left untouched (its summaries alone
// decide that, nothing is decoded; a series of sparse steps, whose chunks straddle edges
// whatever the cut, is decoded and cut anew in memory each time to find nothing gained). A re-cut
// series holds the same points in the same order: queries answer exactly what they answered before
// (bucket means may differ in the last bits, as the sums are added in another grouping).
//
// Crash safety: each series is re-cut in one write transaction (its chunks, summary pages and
// series row together), so an interruption at any moment leaves every series with either its
// old chunks or its new ones. Re-cutting again is a no-op (idempotent). It may run while a
// server uses the database: the transactions are serialised with the server's writes (one
// series at a time; a series of N points holds the write lock for about the time it takes to
// decode and encode N points).
//
// Functions run on the caller's connection; not thread-safe beyond that.
#pragma once

#include <cstdint>
#include <functional>

#include "cohort/status.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

struct RecutCounts {
  int64_t series = 0;             // series looked at
  int64_t series_recut = 0;       // series rewritten
  int64_t series_damaged = 0;     // series left as they are: a chunk failed to decode
  int64_t chunks_before = 0;      // chunks of the rewritten series, before
  int64_t chunks_after = 0;       // chunks of the rewritten series, after
  int64_t points = 0;             // points re-encoded
  int64_t straddling_before = 0;  // chunks of the rewritten series that straddle a window edge
  int64_t straddling_after = 0;   // the same, after
};

// The number of chunks (all series) whose step range straddles a multiple of kMaxChunkPoints.
// Dense data written by version 4 has none; sparse steps (more than kMaxChunkPoints steps per
// kMaxChunkPoints points) straddle edges unavoidably.
Result<int64_t> CountStraddlingChunks(Db* db);

// Re-cuts the series `series_pk` inside the caller's write transaction when that leaves fewer
// straddling chunks (see above): every chunk of the series, sealed and tail, is replaced by
// sealed chunks cut at window edges with new (higher) indexes, its summary pages are rebuilt and
// its tail is left empty. True when rewritten; false when the series is aligned already, gone,
// or holds a chunk that does not decode (counted in series_damaged; it stays as it is, so that
// queries keep naming it in their warnings).
Result<bool> RecutSeries(Db* db, int64_t series_pk, RecutCounts* counts);

// Called after each series with the number done and the total; returning false stops the
// re-cut after the series just committed (a clean interruption).
using RecutProgress = std::function<bool(int64_t done, int64_t total)>;

// Re-cuts every series of the database, one write transaction (BEGIN IMMEDIATE) per series, in
// series order. kUnavailable when `progress` asked to stop; the series done so far stay
// re-cut and running it again finishes the rest.
Status RecutAllSeries(Db* db, const RecutProgress& progress, RecutCounts* counts);

}  // namespace cohort::store::sqlite
