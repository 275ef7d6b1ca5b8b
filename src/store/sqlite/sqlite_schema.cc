#include "store/sqlite/sqlite_schema.h"

#include <string>
#include <vector>

#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store::sqlite {
namespace {

struct Migration {
  int64_t version;
  const char* sql;
};

// Migrations are append-only: never edit one that has shipped; add a new one.
//
// Layout (version 1):
//   runs      one row per run; (entity, project, run_id) unique; tags/config/summary/metadata
//             JSON text; writer_count kept up to date by JoinWriter.
//   writers   one row per (run, label); next_step / last_seq let a writer resume.
//   batches   (writer, seq) of every stored batch: the exactly-once guard.
//   series    one row per (run, key, writer) with its point count and step range.
//   chunks    the encoded chunks of a series (series/chunk.h) with their summaries; the blob
//             is the last column so that reading summaries never touches overflow pages.
//             NaN summary values are stored as NULL.
//   console   console lines; the rowid is the paging cursor.
//   views     saved workspace views, name unique per project.
//   api_keys  hashed API keys.
const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE runs (
  pk INTEGER PRIMARY KEY,
  entity TEXT NOT NULL,
  project TEXT NOT NULL,
  run_id TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  grp TEXT NOT NULL DEFAULT '',
  job_type TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]',
  config TEXT NOT NULL DEFAULT '{}',
  summary TEXT NOT NULL DEFAULT '{}',
  metadata TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL DEFAULT 'pending',
  exit_code INTEGER,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER,
  writer_count INTEGER NOT NULL DEFAULT 0,
  UNIQUE (entity, project, run_id)
);
CREATE INDEX runs_by_created ON runs (entity, project, created_ms, pk);
CREATE INDEX runs_by_updated ON runs (entity, project, updated_ms, pk);
CREATE INDEX runs_by_group ON runs (entity, project, grp, pk);

CREATE TABLE writers (
  pk INTEGER PRIMARY KEY,
  run_pk INTEGER NOT NULL,
  label TEXT NOT NULL,
  is_primary INTEGER NOT NULL,
  update_finish_state INTEGER NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  gpu_ids TEXT NOT NULL DEFAULT '[]',
  state TEXT NOT NULL,
  exit_code INTEGER,
  created_ms INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL,
  finished_ms INTEGER,
  next_step INTEGER NOT NULL DEFAULT 0,
  last_seq INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_pk, label)
);
CREATE INDEX writers_by_heartbeat ON writers (state, heartbeat_ms);

CREATE TABLE batches (
  writer_pk INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  stored_ms INTEGER NOT NULL,
  PRIMARY KEY (writer_pk, seq)
) WITHOUT ROWID;

CREATE TABLE series (
  pk INTEGER PRIMARY KEY,
  run_pk INTEGER NOT NULL,
  writer_pk INTEGER NOT NULL,
  key TEXT NOT NULL,
  is_system INTEGER NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  min_step INTEGER,
  max_step INTEGER,
  UNIQUE (run_pk, key, writer_pk)
);

CREATE TABLE chunks (
  pk INTEGER PRIMARY KEY,
  series_pk INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  count INTEGER NOT NULL,
  min_step INTEGER NOT NULL,
  max_step INTEGER NOT NULL,
  min_time INTEGER NOT NULL,
  max_time INTEGER NOT NULL,
  vmin REAL,
  vmax REAL,
  vsum REAL,
  vfirst REAL,
  vlast REAL,
  nan_count INTEGER NOT NULL,
  data BLOB NOT NULL,
  UNIQUE (series_pk, idx)
);

CREATE TABLE console (
  pk INTEGER PRIMARY KEY,
  run_pk INTEGER NOT NULL,
  writer_pk INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  stream TEXT NOT NULL,
  text TEXT NOT NULL
);
CREATE INDEX console_by_run ON console (run_pk, pk);

CREATE TABLE views (
  pk INTEGER PRIMARY KEY,
  entity TEXT NOT NULL,
  project TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL DEFAULT '{}',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  UNIQUE (entity, project, name)
);

CREATE TABLE api_keys (
  pk INTEGER PRIMARY KEY,
  entity TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  revoked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_by_entity ON api_keys (entity, pk);
)sql"},
      // Version 2 (the W&B compatibility layer, src/server/compat):
      //   console.line_no   a writer's console line position (NULL: appended lines); a line
      //                     re-sent at the same position replaces the stored one.
      //   stream_positions  next offset per (writer, stream): the exactly-once guard of
      //                     batches rebuilt from file_stream offsets (types.h StreamPosition).
      //   run_files         files uploaded to a run, data inline (bounded by the body limit).
      {2, R"sql(
ALTER TABLE console ADD COLUMN line_no INTEGER;
CREATE UNIQUE INDEX console_by_line ON console (writer_pk, line_no) WHERE line_no IS NOT NULL;

CREATE TABLE stream_positions (
  writer_pk INTEGER NOT NULL,
  stream TEXT NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (writer_pk, stream)
) WITHOUT ROWID;

CREATE TABLE run_files (
  run_pk INTEGER NOT NULL,
  name TEXT NOT NULL,
  content_type TEXT NOT NULL DEFAULT '',
  size INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run_pk, name)
);
)sql"},
      // Version 3 (series tails, series/tail.h): a series is sealed chunks followed by a tail of
      // small per-batch chunks that is compacted into full chunks now and then.
      //   series.next_idx     index of the next chunk written (indexes only grow)
      //   series.tail_idx     first chunk of the tail (= next_idx when the tail is empty)
      //   series.tail_count   points in the tail
      //   series.tail_chunks  chunks in the tail
      // A store written by version 2 keeps its chunks as they are: its last (head) chunk is
      // taken as sealed, and later batches start a tail after it.
      // Batch retention (Store::PruneBatches):
      //   writers.pruned_seq  the highest seq whose batches record was pruned; a batch at or
      //                       below it is acknowledged as a duplicate
      //   batches_by_stored   finds the records to prune
      {3, R"sql(
ALTER TABLE writers ADD COLUMN pruned_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX batches_by_stored ON batches (stored_ms);
ALTER TABLE series ADD COLUMN next_idx INTEGER NOT NULL DEFAULT 0;
ALTER TABLE series ADD COLUMN tail_idx INTEGER NOT NULL DEFAULT 0;
ALTER TABLE series ADD COLUMN tail_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE series ADD COLUMN tail_chunks INTEGER NOT NULL DEFAULT 0;
UPDATE series SET
  next_idx = coalesce((SELECT max(idx) + 1 FROM chunks WHERE series_pk = series.pk), 0),
  tail_idx = coalesce((SELECT max(idx) + 1 FROM chunks WHERE series_pk = series.pk), 0);
)sql"},
      // Version 4 (read path: chart queries and console filters):
      //   chunks_summary      covering index of the chunk summaries in series order: a
      //                       bucketed query reads summaries from it without touching the
      //                       chunk rows, whose ~3 KB blobs put each row on its own page.
      //   chunk_pages         the summaries of sealed chunks packed 32 to a row, with the
      //                       pages' step range (sqlite_summary_pages.h); series.paged_upto:
      //                       chunks below this idx are in pages. The migration pages the
      //                       sealed chunks of series written before (PageExistingChunks).
      //   console_by_writer   label filters (writer keys of the run) in line order.
      //   console_by_stream   stream filters in line order.
      //   console_fts         FTS5 trigram index of console text (external content: the text
      //                       stays in console only), kept by triggers; text search of 3+
      //                       characters looks lines up in it (sqlite_series.cc).
      {4, R"sql(
CREATE INDEX chunks_summary ON chunks (series_pk, idx, min_step, max_step, min_time, max_time,
  count, vmin, vmax, vsum, vfirst, vlast, nan_count);
ALTER TABLE series ADD COLUMN paged_upto INTEGER NOT NULL DEFAULT 0;
CREATE TABLE chunk_pages (
  series_pk INTEGER NOT NULL,
  page INTEGER NOT NULL,
  min_step INTEGER NOT NULL,
  max_step INTEGER NOT NULL,
  data BLOB NOT NULL,
  UNIQUE (series_pk, page)
);
CREATE INDEX console_by_writer ON console (run_pk, writer_pk, pk);
CREATE INDEX console_by_stream ON console (run_pk, stream, pk);
CREATE VIRTUAL TABLE console_fts USING fts5(text, content = 'console', content_rowid = 'pk',
  tokenize = 'trigram case_sensitive 1');
INSERT INTO console_fts (console_fts) VALUES ('rebuild');
CREATE TRIGGER console_fts_insert AFTER INSERT ON console BEGIN
  INSERT INTO console_fts (rowid, text) VALUES (new.pk, new.text);
END;
CREATE TRIGGER console_fts_delete AFTER DELETE ON console BEGIN
  INSERT INTO console_fts (console_fts, rowid, text) VALUES ('delete', old.pk, old.text);
END;
CREATE TRIGGER console_fts_update AFTER UPDATE OF text ON console BEGIN
  INSERT INTO console_fts (console_fts, rowid, text) VALUES ('delete', old.pk, old.text);
  INSERT INTO console_fts (rowid, text) VALUES (new.pk, new.text);
END;
)sql"},
      // Version 5 (browser sessions in the store, so that every server sharing it knows them;
      // sqlite_sessions.cc): one row per one-time login token (kind 'login') or session (kind
      // 'session'), by the SHA-256 of its secret, acting for the API key key_pk until
      // expires_ms or until that key is revoked.
      {5, R"sql(
CREATE TABLE sessions (
  hash TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  key_pk INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_by_expiry ON sessions (expires_ms);
)sql"},
      // Version 6 (the summary's last values, store/run_summary.h):
      //   runs.summary_explicit  a JSON array of the summary keys set explicitly; the other
      //                          keys that have a series follow its last stored point.
      {6, R"sql(
ALTER TABLE runs ADD COLUMN summary_explicit TEXT NOT NULL DEFAULT '[]';
)sql"},
  };
  return kMigrations;
}

Status SetVersion(Db* db, int64_t version) {
  COHORT_RETURN_IF_ERROR(db->Exec("DELETE FROM schema_version"));
  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare("INSERT INTO schema_version (version) VALUES (?)"));
  st.Bind(version);
  return st.Run();
}

}  // namespace

int64_t LatestSchemaVersion() { return Migrations().back().version; }

Result<int64_t> SchemaVersion(Db* db) {
  COHORT_ASSIGN_OR_RETURN(
      int64_t has_table, db->QueryInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                      "name = 'schema_version'"));
  if (has_table == 0) return int64_t{0};
  return db->QueryInt("SELECT coalesce(max(version), 0) FROM schema_version");
}

Status Migrate(Db* db) {
  for (const Migration& m : Migrations()) {
    // Each step re-reads the version inside its own transaction, so two processes opening the
    // same file at once cannot both apply a migration.
    COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kWrite));
    COHORT_RETURN_IF_ERROR(
        db->Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
    COHORT_ASSIGN_OR_RETURN(int64_t current, SchemaVersion(db));
    if (current > LatestSchemaVersion()) {
      return Status::FailedPrecondition(
          "sqlite: database schema version " + std::to_string(current) +
          " is newer than this build supports (" + std::to_string(LatestSchemaVersion()) + ")");
    }
    if (current >= m.version) continue;  // the Txn rolls back the no-op
    COHORT_RETURN_IF_ERROR(db->Exec(m.sql));
    if (m.version == 4) COHORT_RETURN_IF_ERROR(PageExistingChunks(db));
    COHORT_RETURN_IF_ERROR(SetVersion(db, m.version));
    COHORT_RETURN_IF_ERROR(txn.Commit());
  }
  return Status::Ok();
}

}  // namespace cohort::store::sqlite
