// The select lists of the runs, writers, views and api_keys tables and the readers that turn one
// result row into a record (the tables have the same columns in both engines). The readers are
// templates over a row accessor, a type with
//   std::string Text(int col); int64_t Int(int col); std::optional<int64_t> OptInt(int col)
// (sql_conn.h Row; tests use a row in memory). Thread-safe (stateless).
#pragma once

#include <optional>
#include <string>

#include "store/meta_types.h"
#include "store/record_json.h"
#include "store/run_state.h"
#include "store/run_types.h"

namespace cohort::store {

// Select lists; `r.` / `w.` qualified so they work in joins.
inline constexpr const char* kRunColumns =
    "r.pk, r.entity, r.project, r.run_id, r.name, r.grp, r.job_type, r.notes, r.host, r.tags, "
    "r.config, r.summary, r.metadata, r.state, r.exit_code, r.created_ms, r.updated_ms, "
    "r.heartbeat_ms, r.finished_ms, r.writer_count";
inline constexpr int kRunColumnCount = 20;

inline constexpr const char* kWriterColumns =
    "w.pk, w.run_pk, w.label, w.is_primary, w.update_finish_state, w.host, w.pid, w.gpu_ids, "
    "w.state, w.exit_code, w.created_ms, w.heartbeat_ms, w.finished_ms, w.next_step, w.last_seq";

inline constexpr const char* kViewColumns =
    "pk, entity, project, name, spec, created_ms, updated_ms";
inline constexpr const char* kKeyColumns =
    "pk, entity, name, role, hash, prefix, created_ms, revoked";
// Without the data column, which the backends read each in its own way.
inline constexpr const char* kRunFileColumns = "name, content_type, size, updated_ms, sha256";

// States are stored as their names; an unreadable one reads as crashed (never happens unless
// the database was edited by hand).
template <typename Row>
RunState ReadStateColumn(const Row& row, int col) {
  return ParseRunState(row.Text(col)).value_or(RunState::kCrashed);
}

// A row selected with kRunColumns from column 0.
template <typename Row>
RunRecord ReadRunRow(const Row& row) {
  RunRecord r;
  r.pk = row.Int(0);
  r.entity = row.Text(1);
  r.project = row.Text(2);
  r.run_id = row.Text(3);
  r.name = row.Text(4);
  r.group = row.Text(5);
  r.job_type = row.Text(6);
  r.notes = row.Text(7);
  r.host = row.Text(8);
  r.tags = StringsFromJson(row.Text(9));
  r.config_json = row.Text(10);
  r.summary_json = row.Text(11);
  r.metadata_json = row.Text(12);
  r.state = ReadStateColumn(row, 13);
  if (auto code = row.OptInt(14)) r.exit_code = int(*code);
  r.created_ms = row.Int(15);
  r.updated_ms = row.Int(16);
  r.heartbeat_ms = row.Int(17);
  r.finished_ms = row.OptInt(18);
  r.writer_count = int(row.Int(19));
  return r;
}

// A row selected with kWriterColumns from column 0. Booleans read as integers (0/1 in SQLite,
// bool in PostgreSQL, whose accessor reads them as 0/1).
template <typename Row>
WriterRecord ReadWriterRow(const Row& row) {
  WriterRecord w;
  w.pk = row.Int(0);
  w.run_pk = row.Int(1);
  w.label = row.Text(2);
  w.primary = row.Int(3) != 0;
  w.update_finish_state = row.Int(4) != 0;
  w.host = row.Text(5);
  w.pid = row.Int(6);
  w.gpu_ids = IntsFromJson(row.Text(7));
  w.state = ReadStateColumn(row, 8);
  if (auto code = row.OptInt(9)) w.exit_code = int(*code);
  w.created_ms = row.Int(10);
  w.heartbeat_ms = row.Int(11);
  w.finished_ms = row.OptInt(12);
  w.next_step = row.Int(13);
  w.last_seq = row.Int(14);
  return w;
}

// A row selected with kViewColumns from column 0.
template <typename Row>
ViewRecord ReadViewRow(const Row& row) {
  ViewRecord v;
  v.id = row.Int(0);
  v.entity = row.Text(1);
  v.project = row.Text(2);
  v.name = row.Text(3);
  v.spec_json = row.Text(4);
  v.created_ms = row.Int(5);
  v.updated_ms = row.Int(6);
  return v;
}

// A row selected with kKeyColumns from column 0.
template <typename Row>
ApiKeyRecord ReadKeyRow(const Row& row) {
  ApiKeyRecord k;
  k.id = row.Int(0);
  k.entity = row.Text(1);
  k.name = row.Text(2);
  k.role = row.Text(3) == "admin" ? KeyRole::kAdmin : KeyRole::kMember;
  k.hash = row.Text(4);
  k.prefix = row.Text(5);
  k.created_ms = row.Int(6);
  k.revoked = row.Int(7) != 0;
  return k;
}

// A row selected with kRunFileColumns from column 0; leaves data empty.
template <typename Row>
RunFile ReadRunFileRow(const Row& row) {
  RunFile f;
  f.name = row.Text(0);
  f.content_type = row.Text(1);
  f.size = row.Int(2);
  f.updated_ms = row.Int(3);
  f.sha256 = row.Text(4);
  return f;
}

// What PutRunFile returns: `file` as a row of kRunFileColumns would read it back.
inline RunFile StoredRunFile(const RunFile& file, int64_t updated_ms) {
  RunFile out;
  out.name = file.name;
  out.content_type = file.content_type;
  out.size = file.sha256.empty() ? int64_t(file.data.size()) : file.size;
  out.updated_ms = updated_ms;
  out.sha256 = file.sha256;
  return out;
}

}  // namespace cohort::store
