// Internal to the PostgreSQL store: column lists of the runs and writers tables, readers that
// turn a result row into a record, and the NotFound messages every file uses. Thread-safe
// (stateless).
#pragma once

#include <string>

#include "cohort/status.h"
#include "store/postgres/pg_conn.h"
#include "store/run_ref.h"
#include "store/types.h"

namespace cohort::store::pg {

// Select lists; `r.` / `w.` qualified so they work in joins.
inline constexpr const char* kRunColumns =
    "r.pk, r.entity, r.project, r.run_id, r.name, r.grp, r.job_type, r.notes, r.host, r.tags, "
    "r.config, r.summary, r.metadata, r.state, r.exit_code, r.created_ms, r.updated_ms, "
    "r.heartbeat_ms, r.finished_ms, r.writer_count";
inline constexpr int kRunColumnCount = 20;

inline constexpr const char* kWriterColumns =
    "w.pk, w.run_pk, w.label, w.is_primary, w.update_finish_state, w.host, w.pid, w.gpu_ids, "
    "w.state, w.exit_code, w.created_ms, w.heartbeat_ms, w.finished_ms, w.next_step, w.last_seq";

// Reads row `row` of a result selected with kRunColumns / kWriterColumns from column 0.
RunRecord ReadRun(const PgResult& res, int row);
WriterRecord ReadWriter(const PgResult& res, int row);

// Shared with every backend (store/run_ref.h).
using store::RunName;
using store::RunNotFound;
using store::WriterNotFound;

}  // namespace cohort::store::pg
