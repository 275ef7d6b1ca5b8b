// Plain records of the data model (DESIGN.md section 2) exchanged with a Store.
// Value types; no behaviour beyond small helpers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cohort::store {

// Writer and run states (DESIGN.md section 3). Stored as their lower-case names.
enum class RunState { kPending, kRunning, kFinished, kFailed, kCrashed, kKilled, kPreempted };
std::string_view RunStateName(RunState s);
std::optional<RunState> ParseRunState(std::string_view s);
inline bool IsTerminal(RunState s) { return s != RunState::kPending && s != RunState::kRunning; }

struct RunRef {
  std::string entity;
  std::string project;
  std::string run_id;
};

struct RunRecord {
  int64_t pk = 0;  // store-internal key
  std::string entity, project, run_id;
  std::string name, group, job_type, notes, host;
  std::vector<std::string> tags;
  std::string config_json = "{}";    // a JSON object
  std::string summary_json = "{}";   // a JSON object
  std::string metadata_json = "{}";  // client telemetry etc., not user config
  RunState state = RunState::kPending;
  std::optional<int> exit_code;
  int64_t created_ms = 0, updated_ms = 0, heartbeat_ms = 0;
  std::optional<int64_t> finished_ms;
  int writer_count = 0;
};

// Fields of create-or-resume. Unset optionals leave an existing run's value untouched.
struct RunUpsert {
  RunRef ref;  // run_id empty: the store makes a fresh random one
  std::optional<std::string> name, group, job_type, notes, host;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> config_json;    // merged key by key into the run's config
  std::optional<std::string> metadata_json;  // replaces the run's metadata
};

// Partial update of a run (PATCH). JSON objects are merged key by key (null deletes a key).
struct RunPatch {
  std::optional<std::string> name, group, job_type, notes;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> config_json;
  std::optional<std::string> summary_json;
};

struct WriterRecord {
  int64_t pk = 0;
  int64_t run_pk = 0;
  std::string label;
  bool primary = true;
  bool update_finish_state = true;
  std::string host;
  int64_t pid = 0;
  std::vector<int64_t> gpu_ids;
  RunState state = RunState::kRunning;
  std::optional<int> exit_code;
  int64_t created_ms = 0, heartbeat_ms = 0;
  std::optional<int64_t> finished_ms;
  int64_t next_step = 0;  // one past the highest step stored for this writer
  int64_t last_seq = 0;   // highest batch sequence number stored
};

struct WriterJoin {
  std::string label;
  bool primary = true;
  bool update_finish_state = true;
  std::string host;
  int64_t pid = 0;
  std::vector<int64_t> gpu_ids;
};

// One writer's heartbeat at now_ms (Store::Heartbeats).
struct HeartbeatUpdate {
  RunRef ref;
  std::string label;
  int64_t now_ms = 0;
};

// One scalar point of a user metric. `step` < 0 asks the store to assign the writer's next step
// (all points of one batch row share it; see IngestBatch::rows).
struct Point {
  int64_t step = 0;
  int64_t time_ms = 0;
  double value = 0;
};

// One logged row: several keys at one step and time.
struct HistoryRow {
  int64_t step = -1;  // -1: server assigns the writer's next step
  int64_t time_ms = 0;
  std::vector<std::pair<std::string, double>> values;
};

// One system-monitor sample: keys without the "system/" prefix ("gpu.0.temp", "cpu").
struct SystemRow {
  int64_t time_ms = 0;
  std::vector<std::pair<std::string, double>> values;
};

struct ConsoleLine {
  int64_t time_ms = 0;
  std::string stream = "stdout";  // "stdout" | "stderr"
  std::string text;
  std::string label;  // filled by the store on reads: the writer's label
  int64_t id = 0;     // filled by the store on reads: a cursor for paging
  // >= 0: the line's position in its writer's console (the W&B output.log offset, see
  // src/server/compat); a line stored before at the same position of the same writer is
  // replaced in place (progress bars re-send lines). -1: the line is appended.
  int64_t line = -1;
};

// A position in one of a writer's ordered input streams, for clients that number their lines
// rather than their batches (the W&B file_stream offsets, src/server/compat). A batch carrying
// positions is stored only when every named stream's stored next offset equals `expect` (a
// stream never written counts as 0); each stream then moves to `next`. Otherwise Ingest fails
// with kFailedPrecondition and stores nothing, so a batch rebuilt from re-sent (file, offset)
// ranges is stored exactly once even when two requests race.
struct StreamPosition {
  std::string stream;
  int64_t expect = 0;
  int64_t next = 0;
};

// Everything one writer sends in one request, applied atomically and at most once per seq.
struct IngestBatch {
  int64_t seq = 0;  // > 0, unique per writer; a seen seq is acknowledged and ignored. 0 only
                    // together with `positions`, which then guard the batch instead.
  std::vector<StreamPosition> positions;  // checked and advanced atomically with the batch
  std::vector<HistoryRow> rows;
  std::vector<SystemRow> system;
  std::vector<ConsoleLine> console;
  // > 0: the run may hold at most this many distinct keys (history and system, all writers); a
  // batch that would take it past them is refused whole with kPayloadTooLarge. Set by the
  // server from the entity's tier (src/server/limits); 0: no limit.
  int64_t max_run_keys = 0;
};

struct IngestResult {
  bool duplicate = false;  // the seq had been stored before; nothing changed
  int64_t points = 0;      // scalar points stored (history + system)
  int64_t next_step = 0;   // the writer's next step after this batch
};

// A filter clause of the run list and saved views: field op value(s).
// fields: name (substring match with op "~"), group, job_type, state, tag, host,
// config.<key>, summary.<key>; ops: "==", "!=", "in", "not in", "~" (contains), "<", ">".
struct Filter {
  std::string field;
  std::string op = "==";
  std::vector<std::string> values;
};

struct RunQuery {
  std::string entity, project;
  std::vector<Filter> filters;   // AND
  std::string sort = "created";  // created | updated | name | state | group | job_type | runtime
  bool descending = true;
  int limit = 100;
  std::string cursor;  // opaque, from RunPage::next_cursor
};

struct RunPage {
  std::vector<RunRecord> runs;
  std::string next_cursor;  // empty at the end
  int64_t total = 0;        // matching runs in all pages
};

struct GroupInfo {
  std::string group;
  int64_t runs = 0;
  std::map<std::string, int64_t> states;     // state name -> count
  std::map<std::string, int64_t> job_types;  // job type -> count
  int64_t created_ms = 0, updated_ms = 0;
};

struct ProjectInfo {
  std::string entity, project;
  int64_t runs = 0;
  int64_t created_ms = 0, updated_ms = 0;
};

// Identifies one series: a key written by one writer of a run.
struct SeriesInfo {
  std::string key;     // user keys as logged; system keys carry the "system/" prefix
  std::string writer;  // label
  int64_t count = 0;
  int64_t min_step = 0, max_step = 0;
};

struct HistoryQuery {
  RunRef run;
  std::vector<std::string> keys;              // empty: all user keys (never system/ unless named)
  std::vector<std::string> writers;           // labels; empty: all
  std::optional<int64_t> min_step, max_step;  // inclusive
  std::optional<int64_t> min_time_ms, max_time_ms;
  int buckets = 0;                 // > 0: bucketed; 0: raw points
  int64_t limit = 100000;          // raw: points per series per page
  int64_t after_step = INT64_MIN;  // raw paging cursor: only steps > after_step
};

struct Bucket {
  int64_t step_min = 0, step_max = 0;  // steps of the first and last point in the bucket
  int64_t time_min = 0, time_max = 0;
  int64_t count = 0;
  int64_t nan_count = 0;  // NaN points among `count` (not in min/max/sum)
  double min = 0, max = 0, sum = 0, first = 0, last = 0;
};

// A stored chunk that failed its checksum or could not be decoded: its points are left out of
// a query's answer, the rest of the series is served (series/query.h).
struct DamagedChunk {
  int64_t min_step = 0, max_step = 0;  // the step range its summary names
  int64_t count = 0;                   // points it held
  std::string reason;
};

struct SeriesData {
  std::string key, writer;
  std::vector<Point> points;          // raw mode, ordered by step
  std::vector<Bucket> buckets;        // bucketed mode, ordered, empty buckets omitted
  bool more = false;                  // raw mode: another page follows (cursor: last step)
  std::vector<DamagedChunk> damaged;  // chunks skipped by this answer
};

struct ConsoleQuery {
  RunRef run;
  std::vector<std::string> labels;  // empty: all
  std::string stream;               // empty: both
  std::string text;                 // substring, case-sensitive; empty: all
  int64_t after_id = 0;             // paging cursor
  int limit = 1000;
};

// Paging cursors of a console filter (Store::IndexConsole): how many lines match after the
// query's after_id, the id of every `stride`-th matching line (the 1-based stride-th, 2*stride-th,
// ...), and the id of the last matching line (the query's after_id when none matches).
struct ConsoleIndex {
  int64_t total = 0;
  std::vector<int64_t> stride_ids;
  int64_t last_id = 0;
};

struct ViewRecord {
  int64_t id = 0;
  std::string entity, project, name;
  std::string spec_json = "{}";  // {filters, group_by, sort, columns, panels}
  int64_t created_ms = 0, updated_ms = 0;
};

// A file attached to a run (W&B clients upload config.yaml, requirements.txt, output.log...).
struct RunFile {
  std::string name;          // relative path, e.g. "media/images/a.png"
  std::string content_type;  // as uploaded; may be empty
  int64_t size = 0;          // bytes
  int64_t updated_ms = 0;
  std::string data;  // empty in listings
};

enum class KeyRole { kAdmin, kMember };

struct ApiKeyRecord {
  int64_t id = 0;
  std::string entity;
  std::string name;
  KeyRole role = KeyRole::kMember;
  std::string hash;    // hex SHA-256 of the secret
  std::string prefix;  // first characters of the key, for display
  int64_t created_ms = 0;
  bool revoked = false;
};

// A browser session or a one-time login token (server/api/auth.h), stored by the hash of its
// secret so that every server sharing the store knows it. It acts for the API key `key_id` (with
// that key's entity and role) until `expires_ms`, or until that key is revoked.
enum class SessionKind { kLoginToken, kSession };
struct SessionRecord {
  std::string hash;  // hex SHA-256 of the secret
  SessionKind kind = SessionKind::kSession;
  int64_t key_id = 0;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;
};
// The column value of a SessionKind in both stores' `sessions` table.
const char* SessionKindName(SessionKind kind);

}  // namespace cohort::store
