// Sealing a finished writer's tails (series/tail.h PlanTailSeal), written once for both SQL
// engines over sql_conn.h: SqlStore::FinishWriter runs it in its transaction (the engines'
// AfterWriterFinished), so that a finished writer's series keep no small tail chunks.
//
// Functions run on the caller's connection, inside its transaction; not thread-safe beyond that.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "series/tail.h"
#include "store/sql/sql_conn.h"

namespace cohort::store::sql {

// What an engine adds for one series whose tail (from chunk `tail_idx_before` on) was sealed,
// after its new chunks `sealed` (in order, consecutive new indexes) were inserted and its series
// row updated to `after` (SQLite: the summary pages).
using AfterTailSealed =
    std::function<Status(Conn& conn, int64_t series_pk, int64_t tail_idx_before,
                         const series::TailState& after,
                         const std::vector<series::ChunkWrite>& sealed)>;

// Seals the tails of every series of the writer `writer_pk`: reads each tail's chunks, re-cuts
// them at window edges as sealed chunks (PlanTailSeal), deletes the tail chunks, inserts the
// sealed ones and updates the series row (next_idx, tail_idx, tail_count, tail_chunks). Query
// answers do not change. `after` (may be empty) runs for each sealed series. The caller holds
// the writer's row lock (every path that changes a series locks its writer first). Returns the
// number of tail chunk rows deleted.
Result<int64_t> SealWriterTails(Conn& conn, int64_t writer_pk, const AfterTailSealed& after);

// Gives up the tail of a series that cannot be compacted or sealed (`why`: a chunk that does not
// decode, a tail short of its count): series::AbandonTail(*state), and a line in the server's
// log naming the series (`key` may be empty).
void AbandonDamagedTail(std::string_view key, int64_t series_pk, std::string_view why,
                        series::TailState* state);

}  // namespace cohort::store::sql
