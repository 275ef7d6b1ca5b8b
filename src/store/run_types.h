// Runs and their writers as a Store keeps them (DESIGN.md sections 2-3), and the run list.
// Plain values; no behaviour beyond small helpers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
// What an upsert of a named run may do: create or resume it (kAllow), only resume it (kMust:
// kNotFound when absent), only create it (kNever: kAlreadyExists when present). Decided in the
// upsert's transaction, so that two creates of one id cannot both succeed.
enum class ResumeMode { kAllow, kMust, kNever };

struct RunUpsert {
  RunRef ref;  // run_id empty: the store makes a fresh random one
  ResumeMode resume = ResumeMode::kAllow;
  std::optional<std::string> name, group, job_type, notes, host;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> config_json;    // merged key by key into the run's config (nulls kept)
  std::optional<std::string> metadata_json;  // replaces the run's metadata
};

// Partial update of a run (PATCH). JSON objects are merged key by key: a null in config_json is
// a value (an argparse default of None), keys leave the config through config_unset; a null in
// summary_json deletes the key.
struct RunPatch {
  std::optional<std::string> name, group, job_type, notes;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> config_json;
  std::optional<std::string> summary_json;
  std::vector<std::string> config_unset;  // removed from the config after config_json is merged
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

// What Store::Heartbeats did: how many writers it updated, and those of them it brought back to
// running (the crash sweep had marked them crashed: see WriterStore::Heartbeat).
struct HeartbeatsApplied {
  int64_t updated = 0;
  std::vector<HeartbeatUpdate> revived;
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

}  // namespace cohort::store
