#include "store/sql/sql_schema.h"

#include <string>
#include <vector>

namespace cohort::store::sql {
namespace {

// The advisory lock key held while migrating a PostgreSQL database ("cohort" 0001).
constexpr int64_t kMigrationLockKey = 0x636f686f72740001;

// Migrations are append-only: never edit one that has shipped; add a new one (sql_schema.h).
//
// Version 1, the pre-release baseline:
//   runs      one row per run; (entity, project, run_id) unique. config/summary/metadata keep
//             the JSON text exactly as written; tags is a JSON array of strings; writer_count is
//             kept by JoinWriter; summary_explicit is a JSON array of the summary keys set
//             explicitly (the others follow their series' last stored point, run_summary.h);
//             media_bytes is the sum of its media rows' size and cell_bytes (the media budget,
//             moved under the row lock by every batch with media, recounted after an import,
//             not dumped). PostgreSQL also keeps jsonb copies of config and summary for
//             run-list filters (config_doc, summary_doc, set by a trigger whenever config or
//             summary is written) and console_next, which numbers the run's console lines under
//             the run's row lock, so ids grow in commit order and a reader paging with after_id
//             never skips a line that commits late.
//   writers   one row per (run, label); next_step / last_seq let a writer resume; pruned_seq is
//             the highest seq whose batches record was pruned (a batch at or below it is a
//             duplicate). On PostgreSQL a writer's row lock serialises its batches across
//             servers. end_unhandled: the writer ended (in that transaction) and the alert rules
//             have not handled its end yet (writers_end_unhandled finds them).
//   batches   (writer, seq) of every stored batch but the ordered ones: the exactly-once
//             guard; batches_by_stored finds the records to prune.
//   ordered_streams  the exactly-once guard of ordered batches (IngestBatch::ordered_stream):
//             per (writer, stream) the highest seq stored; the stream's batches at or below it
//             are duplicates. One row per agent stream of a writer, updated by every batch
//             (PostgreSQL: a HOT update, in place).
//   stream_positions  next offset per (writer, stream): the exactly-once guard of batches
//             rebuilt from file_stream offsets (ingest_batch.h StreamPosition).
//   series    one row per (run, key, writer) with its point count and step range, and its
//             tail (series/tail.h): chunks [tail_idx, next_idx) hold the tail_count points of
//             recent batches until they are compacted into full chunks. SQLite: paged_upto,
//             chunks below it are in chunk_pages.
//   chunks    encoded chunks (series/chunk.h) with their summaries, indexes only growing.
//             SQLite: a rowid (summary pages name it), NaN summaries as NULL, -0.0 as its 8
//             bytes, the blob last so that reading summaries never touches overflow pages,
//             and the covering index chunks_summary of the summaries in series order.
//             PostgreSQL: keyed by (series, idx), data stored uncompressed (it is compressed
//             already) and inline up to ~8 KB; partitioned by `sealed` (false: a tail chunk,
//             which a compaction or the writer's end deletes again, unless a damaged chunk
//             made the store give that tail up: series::AbandonTail) so that the churn of tail
//             chunks stays in the small chunks_tail, vacuumed every thousand dead rows (by the
//             store and by autovacuum's per-table settings),
//             and chunks_sealed only grows (no dead rows, no holes for VACUUM to leave). A row
//             inserted without `sealed` (an import, a finished writer's seal) is sealed; ingest
//             reads and deletes tails by index, in either partition.
//   chunk_pages  (SQLite) the summaries of sealed chunks packed 32 to a row with the page's
//             step range (sqlite_summary_pages.h).
//   console   console lines; id is the paging cursor (SQLite: the rowid, unique in the store;
//             PostgreSQL: numbered per run from runs.console_next). line_no: a writer's line
//             position (NULL: appended lines); a line re-sent at the same position replaces the
//             stored one. Indexes by writer and by stream serve filters in line order. SQLite:
//             console_fts, an FTS5 trigram index of the text (external content, kept by
//             triggers); PostgreSQL: a pg_trgm GIN index where the extension can be created.
//   histograms  histogram values, one per (run, key, writer, step) (a step logged again keeps
//             the last): uniform bins over [lo, hi] when edges is empty, else edges holds the
//             bins + 1 explicit edges (f64 LE); counts per core/histogram.h EncodeCounts. A key
//             has one type per run: no key is both here and in series.
//   media     media values (image, audio, video, html, table), one row per (run, key, writer,
//             step, idx) (a place logged again keeps the last): the blob (sha256, size, in the
//             blob store; `blobs` records that the entity holds it once uploaded), its MIME type,
//             width/height (tables: columns/rows), duration_ms, caption; a table's cell_bytes
//             (the blobs its media cells name) count against the run's media budget with its
//             size. A key has one type per run: no key is here with two types, nor here and in
//             series or histograms.
//   run_files files uploaded to a run, data inline (bounded by the body limit); or, when sha256
//             is set, data is empty and the bytes are that blob of the run's entity (the vendor
//             clients' media files, which media rows name too: one copy).
//   views     saved workspace views, name unique per project.
//   api_keys  hashed API keys.
//   sessions  browser sessions (kind 'session') and one-time login tokens (kind 'login') by the
//             SHA-256 of their secret, acting for the API key key_pk until expires_ms or until
//             that key is revoked (sql_store_sessions.cc).
//   blobs     the blobs (blob/blob_store.h) each entity holds: uploaded and checked once by it;
//             created_ms moves forward when an upload finds the blob held already (at most
//             once per limits::kBlobRetouchMs): `cohort gc`'s grace period counts from there.
//   artifact_collections  (entity, project, name) with its type; next_index numbers versions.
//   artifact_versions  vN of a collection: digest, size, file count, metadata, who logged it
//             (run id and writer label as text: a version outlives the run that logged it).
//   artifact_files  the manifest: path -> blob (sha256, size) or reference (ref, ref_digest).
//   artifact_aliases  alias -> version, unique per collection ("latest" among them).
//   artifact_uses  lineage edges run -> version ('output') and version -> run ('input').
//   blob_md5  the W&B clients name files by MD5: which blob an entity's MD5 is.
//   artifact_drafts  versions the W&B clients are uploading (created, then committed): spec
//             holds the commit's fields as JSON, version_pk the version once committed,
//             client_id the client's own ID of it (what a vendor table's artifact_path names;
//             an artifact equal to the latest version is a draft committed at once).
//             artifact_versions.client_digest / client_manifest: the W&B digest and the blob of
//             the manifest that client uploaded (served back byte for byte).
//   alert_rules  rules per project (kind, spec JSON, level), name unique per project; builtin:
//             one of the defaults every project gets (alert_rule_defaults records that a
//             project got them, so that a deleted default is not created again).
//   alerts    one row per alert: open until its condition clears (state 'resolved'); at most one
//             open alert per (entity, project, run_id, writer_label, condition_key): a partial
//             unique index. alerts_opened counts a project's recent alerts (the rate limit).
//   alert_events  the outbox of alert changes ('opened', 'resolved') delivery reads in id order;
//             PostgreSQL appends them under an advisory lock so ids grow in commit order.
//   alert_webhooks  where a project's alerts are sent (format generic/slack/discord, the HMAC
//             secret of generic payloads, min_level, enabled); name unique per project.
//   alert_deliveries  the delivery log and queue: one row per (webhook, alert event), pending
//             until delivered or failed after its attempts; claimed_by/claim_until_ms is the
//             claim (a conditional UPDATE) of the server sending it now, so that of several
//             servers one sends each attempt. alert_deliveries_due finds the due ones,
//             alert_deliveries_by_alert an alert's deliveries.
//   alert_delivery_cursor  one row: the last alert_events id whose deliveries are enqueued.
// Everything under a run goes with it: foreign keys with ON DELETE CASCADE from writers, series,
// console and run files to the run, from batches and stream positions to the writer, from chunks
// (and pages) to the series. (series.writer_pk and console.writer_pk name a writer of the same
// run; they go with the run.) Text that is compared or sorted is compared bytewise. Rows that
// every ingest updates (runs, writers, series) have no index on the columns it changes, so that
// PostgreSQL keeps those updates HOT.
constexpr const char* kBaseline = R"sql(
CREATE TABLE runs (
  pk {{pk}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  run_id {{key}} NOT NULL,
  name {{key}} NOT NULL DEFAULT '',
  grp {{key}} NOT NULL DEFAULT '',
  job_type {{key}} NOT NULL DEFAULT '',
  notes {{text}} NOT NULL DEFAULT '',
  host {{key}} NOT NULL DEFAULT '',
  tags {{json}} NOT NULL DEFAULT '[]',
  config {{text}} NOT NULL DEFAULT '{}',
  summary {{text}} NOT NULL DEFAULT '{}',
  summary_explicit {{text}} NOT NULL DEFAULT '[]',
  metadata {{text}} NOT NULL DEFAULT '{}',
  state {{key}} NOT NULL DEFAULT 'pending',
  exit_code {{int}},
  created_ms {{int}} NOT NULL,
  updated_ms {{int}} NOT NULL,
  heartbeat_ms {{int}} NOT NULL DEFAULT 0,
  finished_ms {{int}},
  writer_count {{int}} NOT NULL DEFAULT 0,
  media_bytes {{int}} NOT NULL DEFAULT 0,
pg:   config_doc jsonb NOT NULL DEFAULT '{}',
pg:   summary_doc jsonb NOT NULL DEFAULT '{}',
pg:   console_next bigint NOT NULL DEFAULT 0,
  UNIQUE (entity, project, run_id)
){{hot}};
CREATE INDEX runs_by_created ON runs (entity, project, created_ms, pk);
CREATE INDEX runs_by_group ON runs (entity, project, grp, pk);
CREATE INDEX runs_running ON runs (pk) WHERE state = 'running';
sqlite: CREATE INDEX runs_by_updated ON runs (entity, project, updated_ms, pk);

CREATE TABLE writers (
  pk {{pk}},
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  label {{key}} NOT NULL,
  is_primary {{bool}} NOT NULL,
  update_finish_state {{bool}} NOT NULL,
  host {{text}} NOT NULL DEFAULT '',
  pid {{int}} NOT NULL DEFAULT 0,
  gpu_ids {{text}} NOT NULL DEFAULT '[]',
  state {{key}} NOT NULL,
  exit_code {{int}},
  created_ms {{int}} NOT NULL,
  heartbeat_ms {{int}} NOT NULL,
  finished_ms {{int}},
  next_step {{int}} NOT NULL DEFAULT 0,
  last_seq {{int}} NOT NULL DEFAULT 0,
  pruned_seq {{int}} NOT NULL DEFAULT 0,
  end_unhandled {{bool}} NOT NULL DEFAULT false,
  UNIQUE (run_pk, label)
){{hot}};
CREATE INDEX writers_running ON writers (pk) WHERE state = 'running';
CREATE INDEX writers_end_unhandled ON writers (finished_ms, pk) WHERE end_unhandled;

CREATE TABLE batches (
  writer_pk {{int}} NOT NULL REFERENCES writers (pk) ON DELETE CASCADE,
  seq {{int}} NOT NULL,
  stored_ms {{int}} NOT NULL,
  PRIMARY KEY (writer_pk, seq)
){{norowid}};
CREATE INDEX batches_by_stored ON batches (stored_ms);

CREATE TABLE ordered_streams (
  writer_pk {{int}} NOT NULL REFERENCES writers (pk) ON DELETE CASCADE,
  stream {{key}} NOT NULL,
  seq {{int}} NOT NULL,
  PRIMARY KEY (writer_pk, stream)
){{norowid}}{{hot}};

CREATE TABLE stream_positions (
  writer_pk {{int}} NOT NULL REFERENCES writers (pk) ON DELETE CASCADE,
  stream {{key}} NOT NULL,
  next_offset {{int}} NOT NULL,
  PRIMARY KEY (writer_pk, stream)
){{norowid}};

CREATE TABLE series (
  pk {{pk}},
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  writer_pk {{int}} NOT NULL,
  key {{key}} NOT NULL,
  is_system {{bool}} NOT NULL,
  count {{int}} NOT NULL DEFAULT 0,
  min_step {{int}},
  max_step {{int}},
  next_idx {{int}} NOT NULL DEFAULT 0,
  tail_idx {{int}} NOT NULL DEFAULT 0,
  tail_count {{int}} NOT NULL DEFAULT 0,
  tail_chunks {{int}} NOT NULL DEFAULT 0,
sqlite:   paged_upto INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_pk, key, writer_pk)
){{hot}};

CREATE TABLE chunks (
sqlite:   pk INTEGER PRIMARY KEY,
  series_pk {{int}} NOT NULL REFERENCES series (pk) ON DELETE CASCADE,
  idx {{int}} NOT NULL,
  count {{int}} NOT NULL,
  min_step {{int}} NOT NULL,
  max_step {{int}} NOT NULL,
  min_time {{int}} NOT NULL,
  max_time {{int}} NOT NULL,
  vmin {{real}},
  vmax {{real}},
  vsum {{real}},
  vfirst {{real}},
  vlast {{real}},
  nan_count {{int}} NOT NULL,
  data {{blob}} NOT NULL,
pg:   sealed boolean NOT NULL DEFAULT true,
sqlite:   UNIQUE (series_pk, idx)
pg:   PRIMARY KEY (series_pk, idx, sealed)
)
pg: PARTITION BY LIST (sealed)
;
pg: CREATE TABLE chunks_sealed PARTITION OF chunks FOR VALUES IN (true)
pg:   WITH (toast_tuple_target = 8160);
pg: CREATE TABLE chunks_tail PARTITION OF chunks FOR VALUES IN (false)
pg:   WITH (toast_tuple_target = 8160, autovacuum_vacuum_scale_factor = 0,
pg:         autovacuum_vacuum_threshold = {{tail_vacuum_rows}}, autovacuum_vacuum_cost_delay = 0);
pg: ALTER TABLE chunks ALTER COLUMN data SET STORAGE EXTERNAL;
sqlite: CREATE INDEX chunks_summary ON chunks (series_pk, idx, min_step, max_step, min_time,
sqlite:   max_time, count, vmin, vmax, vsum, vfirst, vlast, nan_count);
sqlite: CREATE TABLE chunk_pages (
sqlite:   series_pk INTEGER NOT NULL REFERENCES series (pk) ON DELETE CASCADE,
sqlite:   page INTEGER NOT NULL,
sqlite:   min_step INTEGER NOT NULL,
sqlite:   max_step INTEGER NOT NULL,
sqlite:   data BLOB NOT NULL,
sqlite:   UNIQUE (series_pk, page)
sqlite: );

CREATE TABLE console (
sqlite:   id INTEGER PRIMARY KEY,
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
pg:   id bigint NOT NULL,
  writer_pk {{int}} NOT NULL,
  time_ms {{int}} NOT NULL,
  stream {{key}} NOT NULL,
  text {{text}} NOT NULL,
  line_no {{int}}
pg:   , PRIMARY KEY (run_pk, id)
);
sqlite: CREATE INDEX console_by_run ON console (run_pk, id);
CREATE INDEX console_by_writer ON console (run_pk, writer_pk, id);
CREATE INDEX console_by_stream ON console (run_pk, stream, id);
CREATE UNIQUE INDEX console_by_line ON console (writer_pk, line_no) WHERE line_no IS NOT NULL;
sqlite: CREATE VIRTUAL TABLE console_fts USING fts5(text, content = 'console', content_rowid = 'id',
sqlite:   tokenize = 'trigram case_sensitive 1');
sqlite: CREATE TRIGGER console_fts_insert AFTER INSERT ON console BEGIN
sqlite:   INSERT INTO console_fts (rowid, text) VALUES (new.id, new.text);
sqlite: END;
sqlite: CREATE TRIGGER console_fts_delete AFTER DELETE ON console BEGIN
sqlite:   INSERT INTO console_fts (console_fts, rowid, text) VALUES ('delete', old.id, old.text);
sqlite: END;
sqlite: CREATE TRIGGER console_fts_update AFTER UPDATE OF text ON console BEGIN
sqlite:   INSERT INTO console_fts (console_fts, rowid, text) VALUES ('delete', old.id, old.text);
sqlite:   INSERT INTO console_fts (rowid, text) VALUES (new.id, new.text);
sqlite: END;
pg: DO $$
pg: BEGIN
pg:   IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
pg:     BEGIN
pg:       CREATE EXTENSION IF NOT EXISTS pg_trgm;
pg:       CREATE INDEX console_text_trgm ON console USING gin (text gin_trgm_ops);
pg:     EXCEPTION WHEN insufficient_privilege OR feature_not_supported THEN
pg:       RAISE NOTICE 'pg_trgm unavailable: console text search scans';
pg:     END;
pg:   END IF;
pg: END
pg: $$;

CREATE TABLE histograms (
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  key {{key}} NOT NULL,
  writer_pk {{int}} NOT NULL,
  step {{int}} NOT NULL,
  time_ms {{int}} NOT NULL,
  bins {{int}} NOT NULL,
  lo {{real}} NOT NULL,
  hi {{real}} NOT NULL,
  edges {{blob}} NOT NULL,
  counts {{blob}} NOT NULL,
  PRIMARY KEY (run_pk, key, writer_pk, step)
){{norowid}};

CREATE TABLE media (
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  key {{key}} NOT NULL,
  writer_pk {{int}} NOT NULL,
  step {{int}} NOT NULL,
  idx {{int}} NOT NULL,
  time_ms {{int}} NOT NULL,
  type {{text}} NOT NULL,
  mime {{text}} NOT NULL,
  sha256 {{text}} NOT NULL,
  size {{int}} NOT NULL,
  width {{int}} NOT NULL,
  height {{int}} NOT NULL,
  duration_ms {{int}} NOT NULL,
  caption {{text}} NOT NULL,
  path {{text}} NOT NULL,
  artifact_ref {{text}} NOT NULL DEFAULT '',
  cell_bytes {{int}} NOT NULL DEFAULT 0,
  PRIMARY KEY (run_pk, key, writer_pk, step, idx)
){{norowid}};
CREATE INDEX media_sha256 ON media (sha256);
CREATE INDEX media_awaiting_upload ON media (run_pk, path) WHERE sha256 = '';

CREATE TABLE run_files (
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  name {{key}} NOT NULL,
  content_type {{text}} NOT NULL DEFAULT '',
  size {{int}} NOT NULL,
  updated_ms {{int}} NOT NULL,
  data {{blob}} NOT NULL,
  sha256 {{text}} NOT NULL DEFAULT '',
  PRIMARY KEY (run_pk, name)
);
CREATE INDEX run_files_by_blob ON run_files (sha256) WHERE sha256 <> '';

CREATE TABLE views (
  pk {{pk}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  name {{key}} NOT NULL,
  spec {{text}} NOT NULL DEFAULT '{}',
  created_ms {{int}} NOT NULL,
  updated_ms {{int}} NOT NULL,
  UNIQUE (entity, project, name)
);

CREATE TABLE api_keys (
  pk {{pk}},
  entity {{key}} NOT NULL,
  name {{text}} NOT NULL DEFAULT '',
  role {{text}} NOT NULL,
  hash {{key}} NOT NULL UNIQUE,
  prefix {{text}} NOT NULL DEFAULT '',
  created_ms {{int}} NOT NULL,
  revoked {{bool}} NOT NULL DEFAULT false
);
CREATE INDEX api_keys_by_entity ON api_keys (entity, pk);

CREATE TABLE sessions (
  hash {{key}} PRIMARY KEY,
  kind {{key}} NOT NULL,
  key_pk {{int}} NOT NULL REFERENCES api_keys (pk) ON DELETE CASCADE,
  created_ms {{int}} NOT NULL,
  expires_ms {{int}} NOT NULL
){{norowid}};
CREATE INDEX sessions_by_expiry ON sessions (expires_ms);

CREATE TABLE blobs (
  entity {{key}} NOT NULL,
  sha256 {{key}} NOT NULL,
  size {{int}} NOT NULL,
  created_ms {{int}} NOT NULL,
  PRIMARY KEY (entity, sha256)
){{norowid}};

CREATE TABLE artifact_collections (
  pk {{pk}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  name {{key}} NOT NULL,
  type {{key}} NOT NULL,
  next_index {{int}} NOT NULL DEFAULT 0,
  created_ms {{int}} NOT NULL,
  updated_ms {{int}} NOT NULL,
  UNIQUE (entity, project, name)
);

CREATE TABLE artifact_versions (
  pk {{pk}},
  collection_pk {{int}} NOT NULL REFERENCES artifact_collections (pk) ON DELETE CASCADE,
  idx {{int}} NOT NULL,
  digest {{key}} NOT NULL,
  size {{int}} NOT NULL,
  file_count {{int}} NOT NULL,
  description {{text}},
  metadata {{text}} NOT NULL DEFAULT '{}',
  run_id {{key}} NOT NULL DEFAULT '',
  writer {{key}} NOT NULL DEFAULT '',
  created_ms {{int}} NOT NULL,
  client_digest {{key}},
  client_manifest {{key}},
  UNIQUE (collection_pk, idx)
);

CREATE TABLE artifact_files (
  version_pk {{int}} NOT NULL REFERENCES artifact_versions (pk) ON DELETE CASCADE,
  path {{key}} NOT NULL,
  sha256 {{key}},
  size {{int}},
  ref {{text}},
  ref_digest {{text}},
  PRIMARY KEY (version_pk, path)
){{norowid}};
CREATE INDEX artifact_files_by_blob ON artifact_files (sha256);

CREATE TABLE artifact_aliases (
  collection_pk {{int}} NOT NULL REFERENCES artifact_collections (pk) ON DELETE CASCADE,
  alias {{key}} NOT NULL,
  version_pk {{int}} NOT NULL REFERENCES artifact_versions (pk) ON DELETE CASCADE,
  PRIMARY KEY (collection_pk, alias)
){{norowid}};
CREATE INDEX artifact_aliases_by_version ON artifact_aliases (version_pk);

CREATE TABLE artifact_uses (
  version_pk {{int}} NOT NULL REFERENCES artifact_versions (pk) ON DELETE CASCADE,
  run_pk {{int}} NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
  writer {{key}} NOT NULL DEFAULT '',
  direction {{key}} NOT NULL,
  used_ms {{int}} NOT NULL,
  PRIMARY KEY (version_pk, run_pk, writer, direction)
){{norowid}};
CREATE INDEX artifact_uses_by_run ON artifact_uses (run_pk);

CREATE TABLE blob_md5 (
  entity {{key}} NOT NULL,
  md5 {{key}} NOT NULL,
  sha256 {{key}} NOT NULL,
  size {{int}} NOT NULL,
  PRIMARY KEY (entity, md5)
){{norowid}};
CREATE INDEX blob_md5_by_sha256 ON blob_md5 (entity, sha256);

CREATE TABLE artifact_drafts (
  pk {{pk}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  name {{key}} NOT NULL,
  type {{key}} NOT NULL,
  client_digest {{key}} NOT NULL,
  spec {{text}} NOT NULL DEFAULT '{}',
  manifest_sha256 {{key}},
  version_pk {{int}} REFERENCES artifact_versions (pk) ON DELETE SET NULL,
  client_id {{key}} NOT NULL DEFAULT '',
  created_ms {{int}} NOT NULL
);
CREATE INDEX artifact_drafts_client ON artifact_drafts (entity, client_id) WHERE client_id <> '';

CREATE TABLE alert_rules (
  id {{serial}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  name {{key}} NOT NULL,
  kind {{key}} NOT NULL,
  spec_json {{text}} NOT NULL DEFAULT '{}',
  level {{key}} NOT NULL,
  enabled {{bool}} NOT NULL DEFAULT true,
  builtin {{bool}} NOT NULL DEFAULT false,
  created_ms {{int}} NOT NULL,
  updated_ms {{int}} NOT NULL,
  UNIQUE (entity, project, name)
);

CREATE TABLE alert_rule_defaults (
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  created_ms {{int}} NOT NULL,
  PRIMARY KEY (entity, project)
){{norowid}};

CREATE TABLE alerts (
  id {{serial}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  run_id {{key}} NOT NULL,
  writer_label {{key}} NOT NULL DEFAULT '',
  rule_id {{int}},
  source {{key}} NOT NULL,
  condition_key {{key}} NOT NULL,
  level {{key}} NOT NULL,
  title {{text}} NOT NULL,
  text {{text}} NOT NULL DEFAULT '',
  evidence_json {{text}} NOT NULL DEFAULT '{}',
  state {{key}} NOT NULL,
  opened_ms {{int}} NOT NULL,
  resolved_ms {{int}},
  acked_ms {{int}},
  acked_by {{text}},
  last_seen_ms {{int}} NOT NULL,
  count {{int}} NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX alerts_one_open ON alerts (entity, project, run_id, writer_label,
  condition_key) WHERE state = 'open';
CREATE INDEX alerts_opened ON alerts (entity, project, opened_ms);

CREATE TABLE alert_events (
  id {{serial}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  alert_id {{int}} NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
  kind {{key}} NOT NULL,
  created_ms {{int}} NOT NULL
);

CREATE TABLE alert_webhooks (
  id {{serial}},
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  name {{key}} NOT NULL,
  url {{text}} NOT NULL,
  format {{key}} NOT NULL,
  secret {{text}} NOT NULL DEFAULT '',
  min_level {{key}} NOT NULL,
  enabled {{bool}} NOT NULL DEFAULT true,
  created_ms {{int}} NOT NULL,
  UNIQUE (entity, project, name)
);

CREATE TABLE alert_deliveries (
  id {{serial}},
  webhook_id {{int}} NOT NULL REFERENCES alert_webhooks (id) ON DELETE CASCADE,
  entity {{key}} NOT NULL,
  project {{key}} NOT NULL,
  event_id {{int}} NOT NULL,
  alert_id {{int}} NOT NULL,
  event_kind {{key}} NOT NULL,
  state {{key}} NOT NULL DEFAULT 'pending',
  attempts {{int}} NOT NULL DEFAULT 0,
  next_attempt_ms {{int}} NOT NULL,
  last_status {{int}},
  last_error {{text}} NOT NULL DEFAULT '',
  claimed_by {{key}} NOT NULL DEFAULT '',
  claim_until_ms {{int}} NOT NULL DEFAULT 0,
  delivered_ms {{int}},
  created_ms {{int}} NOT NULL,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_ms, id)
  WHERE state = 'pending';
CREATE INDEX alert_deliveries_by_alert ON alert_deliveries (entity, project, alert_id, id);

CREATE TABLE alert_delivery_cursor (
  id {{int}} PRIMARY KEY,
  last_event_id {{int}} NOT NULL
);
INSERT INTO alert_delivery_cursor (id, last_event_id) VALUES (1, 0);

pg: -- The jsonb copy of JSON text: the escape \u0000, which jsonb refuses, as \ufffd (an escaped
pg: -- backslash before it is left alone).
pg: CREATE FUNCTION cohort_jsonb(t text) RETURNS jsonb
pg: LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
pg:   SELECT regexp_replace(t, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufffd', 'g')::jsonb
pg: $$;
pg: CREATE FUNCTION cohort_runs_docs() RETURNS trigger LANGUAGE plpgsql AS $$
pg: BEGIN
pg:   NEW.config_doc := cohort_jsonb(NEW.config);
pg:   NEW.summary_doc := cohort_jsonb(NEW.summary);
pg:   RETURN NEW;
pg: END
pg: $$;
pg: CREATE TRIGGER runs_docs BEFORE INSERT OR UPDATE OF config, summary ON runs
pg:   FOR EACH ROW EXECUTE FUNCTION cohort_runs_docs();
pg: -- Run-list filters on config.<key> / summary.<key> compare values the way SQLite's
pg: -- json_extract does: numbers and booleans (1/0) as doubles, strings as text.
pg: CREATE FUNCTION cohort_json_num(v jsonb) RETURNS double precision
pg: LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
pg:   SELECT CASE jsonb_typeof(v)
pg:     WHEN 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN 1.0::float8 ELSE 0.0::float8 END
pg:     WHEN 'number' THEN CASE
pg:       WHEN abs(v::numeric) > 1e308 THEN sign(v::numeric)::float8 * 'Infinity'::float8
pg:       WHEN abs(v::numeric) < 1e-307 THEN 0.0::float8
pg:       ELSE v::float8 END
pg:   END
pg: $$;
pg: -- The value as json_extract returns it for text comparison: strings unquoted, objects and
pg: -- arrays as JSON text; numbers, booleans and null give NULL.
pg: CREATE FUNCTION cohort_json_str(v jsonb) RETURNS text
pg: LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
pg:   SELECT CASE jsonb_typeof(v)
pg:     WHEN 'string' THEN v #>> '{}'
pg:     WHEN 'object' THEN v::text
pg:     WHEN 'array' THEN v::text
pg:   END
pg: $$;
pg: -- CAST(json_extract(...) AS TEXT): numbers as written, booleans as 1/0, null as NULL.
pg: CREATE FUNCTION cohort_json_cast_text(v jsonb) RETURNS text
pg: LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
pg:   SELECT CASE jsonb_typeof(v)
pg:     WHEN 'string' THEN v #>> '{}'
pg:     WHEN 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN '1' ELSE '0' END
pg:     WHEN 'null' THEN NULL
pg:     ELSE v::text
pg:   END
pg: $$;
)sql";

const std::vector<const char*>& Migrations() {
  static const std::vector<const char*> kMigrations = {kBaseline};
  return kMigrations;
}

Status TooNew(Engine engine, int64_t current) {
  return Status::FailedPrecondition(
      std::string(EngineName(engine)) + ": database schema version " + std::to_string(current) +
      " is newer than this build supports (" + std::to_string(LatestSchemaVersion()) + ")");
}

}  // namespace

int64_t LatestSchemaVersion() { return int64_t(Migrations().size()); }

std::string SchemaScript(int64_t version, Engine engine) {
  return RenderSchema(Migrations().at(size_t(version - 1)), engine,
                      {{"tail_vacuum_rows", std::to_string(kTailVacuumRows)}});
}

Result<int64_t> SchemaVersion(Conn& conn) {
  return QueryInt(conn, "SELECT coalesce(max(version), 0) FROM schema_version");
}

Status Migrate(Engine engine, const MigrationRunner& runner) {
  // The common case, a database at this version already, takes no lock. (An empty database has
  // no schema_version table: the query fails and the locked path below creates it.)
  int64_t current = -1;
  (void)runner.read([&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(current, SchemaVersion(conn));
    return Status::Ok();
  });
  if (current > LatestSchemaVersion()) return TooNew(engine, current);
  if (current == LatestSchemaVersion()) return Status::Ok();
  return runner.write([&](Conn& conn) -> Status {
    if (engine == Engine::kPostgres) {
      // Held to the end of the transaction: whoever held it before us has committed.
      COHORT_RETURN_IF_ERROR(
          conn.Exec("SELECT pg_advisory_xact_lock($1)", Params().Add(kMigrationLockKey)).status());
    }
    COHORT_RETURN_IF_ERROR(conn.ExecScript(RenderSchema(
        "CREATE TABLE IF NOT EXISTS schema_version (version {{int}} NOT NULL)", engine)));
    COHORT_ASSIGN_OR_RETURN(int64_t at, SchemaVersion(conn));
    if (at > LatestSchemaVersion()) return TooNew(engine, at);
    if (at == LatestSchemaVersion()) return Status::Ok();  // someone else migrated meanwhile
    for (int64_t v = at + 1; v <= LatestSchemaVersion(); ++v) {
      COHORT_RETURN_IF_ERROR(conn.ExecScript(SchemaScript(v, engine)));
    }
    COHORT_RETURN_IF_ERROR(conn.Exec("DELETE FROM schema_version").status());
    return conn
        .Exec("INSERT INTO schema_version (version) VALUES ($1)",
              Params().Add(LatestSchemaVersion()))
        .status();
  });
}

}  // namespace cohort::store::sql
