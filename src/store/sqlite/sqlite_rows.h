// Internal to the SQLite store: column lists of the runs and writers tables, readers that turn a
// result row into a record, and the NotFound messages every file uses. Thread-safe (stateless).
#pragma once

#include <string>

#include "cohort/status.h"
#include "store/run_ref.h"
#include "store/sqlite/sqlite_db.h"
#include "store/types.h"

namespace cohort::store::sqlite {

// Select lists; `r.` / `w.` qualified so they work in joins.
inline constexpr const char* kRunColumns =
    "r.pk, r.entity, r.project, r.run_id, r.name, r.grp, r.job_type, r.notes, r.host, r.tags, "
    "r.config, r.summary, r.metadata, r.state, r.exit_code, r.created_ms, r.updated_ms, "
    "r.heartbeat_ms, r.finished_ms, r.writer_count";
inline constexpr int kRunColumnCount = 20;

inline constexpr const char* kWriterColumns =
    "w.pk, w.run_pk, w.label, w.is_primary, w.update_finish_state, w.host, w.pid, w.gpu_ids, "
    "w.state, w.exit_code, w.created_ms, w.heartbeat_ms, w.finished_ms, w.next_step, w.last_seq";

// Reads a row selected with kRunColumns / kWriterColumns starting at column 0.
RunRecord ReadRun(const Stmt& st);
WriterRecord ReadWriter(const Stmt& st);

// States are stored as their names; an unreadable one reads as crashed (never happens unless
// the file was edited by hand).
RunState ReadState(const Stmt& st, int col);

// Shared with every backend (store/run_ref.h).
using store::RunName;
using store::RunNotFound;
using store::WriterNotFound;

}  // namespace cohort::store::sqlite
