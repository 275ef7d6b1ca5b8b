// Cohort C++ client: track a training process.
//
//   cohort::Settings s;
//   s.project = "mnist";
//   s.group = "DDP";
//   auto run = cohort::Init(s);
//   if (!run.ok()) { ... }
//   for (int step = 0; step < 100; ++step) run->Log({{"loss", 0.5}, {"acc", 0.9}});
//   (void)run->Finish(0);
//
// Log() never blocks on I/O: it appends to an in-memory batch that a background thread hands to
// the node agent (or, without an agent, to an in-process sender). A Run is thread-safe: any
// thread may call any method. Moving a Run is cheap; copies share the same underlying run.
// A run lives until Finish() (or the process's exit, see Finish), even when every Run handle
// is gone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cohort/histogram.h"
#include "cohort/status.h"

namespace cohort {

struct Settings {
  // Where and who. Empty fields come from the environment (COHORT_BASE_URL, COHORT_API_KEY,
  // COHORT_ENTITY, COHORT_PROJECT, COHORT_RUN_ID, COHORT_MODE, COHORT_DIR), then from the config
  // file that `cohort login` or a local `cohort server` wrote, then from defaults.
  std::string base_url;
  std::string api_key;
  std::string entity;
  std::string project;
  std::string run_id;  // join/resume this run; empty: a new random id
  std::string name, group, job_type, notes;
  std::vector<std::string> tags;
  std::string config_json;  // a JSON object; empty: none
  std::string resume;       // "", "allow", "must", "never"
  std::string mode;         // "online" (default), "offline", "disabled"
  std::string dir;          // local data directory (WAL of offline runs); empty: default

  // Shared mode (several writers in one run).
  bool shared = false;  // mode="shared" in the Python SDK
  std::string label;    // writer label; empty: rank_<RANK> under torchrun, else <host>-<random>
  std::optional<bool> primary;              // default: shared under torchrun RANK == 0; else true
  std::optional<bool> update_finish_state;  // default: primary when shared, else true
  std::optional<std::vector<int>> stats_gpu_device_ids;  // default: all GPUs
  double stats_sampling_interval_s = 15.0;               // system monitor period; 0 disables
  bool capture_console = true;  // capture this process's stdout/stderr lines

  double init_timeout_s = 30.0;    // Init returns within this even when the server is down
  double finish_timeout_s = 30.0;  // Finish returns within this

  // "agent" (default; reuse or spawn the machine's shared agent, else start a private one) or
  // "private" (a private agent of this process alone, `cohort agent --private`; "inprocess" is
  // the same; COHORT_AGENT=private).
  std::string transport;

  // Init installs, once per process, a SIGTERM handler that ends every live run as "killed"
  // (exit code 143), flushing what is pending, and then re-raises the signal (or calls the
  // handler that was there before). A SIGTERM disposition of SIG_IGN is left alone. A child
  // forked (without exec) after Init gets the same when it first uses the run: its own writer
  // ends as "killed". The Python SDK turns this off: it installs its own handler.
  bool handle_sigterm = true;
};

// One logged value map: key -> value. Nested keys are written "a/b".
using Values = std::vector<std::pair<std::string, double>>;
// Histogram values of one log call: key -> histogram (cohort/histogram.h).
using Histograms = std::vector<std::pair<std::string, Histogram>>;

// A key interned by Run::Key(): logging by KeyId costs no string work at all (the fast path of
// Run::Log). A KeyId is valid for the run that made it (and runs sharing its state: copies,
// a forked child) for the run's whole life; one made for another run names another key.
struct KeyId {
  uint32_t index = UINT32_MAX;  // UINT32_MAX: invalid (an empty or too long key)
  bool valid() const { return index != UINT32_MAX; }
};
struct Point {
  KeyId key;
  double value = 0;
};

// An artifact version to log (docs/artifacts.md): files hashed (SHA-256) and staged by the
// client, uploaded by the node agent in the background.
struct ArtifactFile {
  std::string path;        // inside the version ("model.pt", "data/train.csv")
  std::string source;      // the file on this machine
  bool immutable = false;  // true: uploaded from `source` itself (no staged copy); it must not
                           // change until the version is committed (else the upload fails)
};
struct ArtifactReference {
  std::string path;    // inside the version
  std::string uri;     // file://, s3://, http(s)://
  std::string digest;  // checksum or ETag when known
  int64_t size = -1;   // -1: unknown
};
struct Artifact {
  std::string name;  // 1-128 bytes of A-Z a-z 0-9 . _ -, not starting with '.'
  std::string type;  // "model", "dataset", ... (same rules)
  std::string description;
  std::string metadata_json;         // a JSON object; empty: none
  std::vector<std::string> aliases;  // besides "latest", which moves by itself
  std::vector<ArtifactFile> files;
  std::vector<ArtifactReference> references;
};
// Where a logged version stands (Run::ArtifactState / WaitArtifact).
struct ArtifactVersion {
  std::string id;     // the intent's id (LogArtifact's answer)
  std::string state;  // "hashing", "queued", "pending", "committed", "failed"
  std::string name;
  std::string version;   // committed: "v3"
  std::string digest;    // committed: the version's digest
  int64_t size = 0;      // committed: bytes
  bool created = false;  // committed: a new version (false: same digest as the latest)
  int64_t files_done = 0, files_total = 0, bytes_done = 0, bytes_total = 0;
  int64_t parts_uploaded = 0;  // parts the agent sent (0 when the server held every file)
  std::string error;           // failed: why (the server's message)
};

// One media value (docs/python.md "Media"): an image, audio clip, video, html page or table
// whose encoded bytes are a blob named by SHA-256. The client hands the bytes to the agent as a
// file first (Run::LogArtifactIntent with "media": true), then logs the row (Run::LogMedia).
struct MediaValue {
  std::string sha256;       // 64 lowercase hex digits
  int64_t size = 0;         // bytes
  std::string mime;         // "image/png", "audio/wav", "video/mp4", "text/html", ...
  int64_t width = 0;        // images, video: pixels; tables: columns
  int64_t height = 0;       // images, video: pixels; tables: rows
  int64_t duration_ms = 0;  // audio, video
  std::string caption;
  int64_t cell_bytes = 0;   // tables: the bytes of the blobs their media cells name
};

// The level of an alert raised by code (Run::Alert): "INFO", "WARN", "ERROR" on the wire.
enum class AlertLevel { kInfo, kWarn, kError };

class Run {
 public:
  Run();  // a disabled run: every call is a cheap no-op
  ~Run();
  Run(const Run&);
  Run& operator=(const Run&);
  Run(Run&&) noexcept;
  Run& operator=(Run&&) noexcept;

  // Logs values at the writer's current step, then (commit=true) advances the step. With an
  // explicit step, values go to that step; a step lower than the current one is ignored (and
  // counted in dropped()). commit=false accumulates values into the current step.
  void Log(const Values& values, std::optional<int64_t> step = std::nullopt, bool commit = true);
  // The same with interned keys: no string compare, no allocation.
  //   const cohort::KeyId loss = run.Key("loss"), acc = run.Key("acc");
  //   const cohort::Point points[] = {{loss, 0.5}, {acc, 0.9}};
  //   run.Log(points);
  // Points with an invalid KeyId are counted in dropped().
  void Log(std::span<const Point> points, std::optional<int64_t> step = std::nullopt,
           bool commit = true);
  // Interns `key` for Log(span<const Point>); an invalid KeyId when the key breaks the key rule
  // (1..256 bytes of UTF-8, no NUL byte, not starting with "system/": docs/api.md).
  KeyId Key(std::string_view key);
  // Logs values and histograms in one call: the same step rules, one step for all of them. A
  // key has one type per run: kInvalidArgument naming the key (and nothing of the call logged)
  // when a histogram is invalid (cohort/histogram.h), its key breaks the key rule, or a key was
  // logged before with the other type by this writer (the server refuses the same across
  // writers). Scalars logged by the other Log()s under a histogram key are dropped (counted).
  Status Log(const Values& values, const Histograms& histograms,
             std::optional<int64_t> step = std::nullopt, bool commit = true);

  // Claims `key` for media of `type` ("image", "audio", "video", "html", "table") in this
  // writer: kInvalidArgument naming the key when it breaks the key rule or was logged with
  // another type (a scalar, a histogram, another media type). The Python SDK claims at the
  // log call, then encodes off the training thread and calls LogMedia.
  Status ClaimMediaKey(std::string_view key, std::string_view type);
  // Checks one call's set of `count` media under `key` against the server's limits
  // (max_media_per_step(); the server's default while not known) and, when the server said it,
  // its largest file known now (`largest_file_bytes`; < 0: none, e.g. arrays not encoded yet)
  // against max_media_file_bytes(): kInvalidArgument naming the key and the limit.
  Status CheckMediaSet(std::string_view key, int64_t count, int64_t largest_file_bytes) const;
  // Logs one step's set of media under `key` (index 0..n-1) at `step` (>= 0), claiming the key
  // as ClaimMediaKey does. kInvalidArgument naming the key for a bad row (digest, size, MIME
  // type, caption), nothing of the set logged.
  Status LogMedia(std::string_view key, std::string_view type, int64_t step,
                  const std::vector<MediaValue>& set);

  // Claims `key` for histograms in this writer: kInvalidArgument naming the key when it breaks
  // the key rule or was logged with another type. The Python SDK claims at the log call, computes
  // the histogram off the training thread, then calls LogHistogram at that call's step.
  Status ClaimHistogramKey(std::string_view key);
  // Logs one histogram under `key` at `step` (>= 0; below the current step too: the step of the
  // call that claimed it), claiming the key as ClaimHistogramKey does. kInvalidArgument naming
  // the key for an invalid histogram (cohort/histogram.h); kResourceExhausted, counted in
  // dropped(), when more histograms wait for the agent than the buffer may hold;
  // kFailedPrecondition after Finish.
  Status LogHistogram(std::string_view key, int64_t step, const Histogram& histogram);

  // Merges keys into the run's config / summary (JSON object text). Only the primary writer's
  // config reaches the server in shared mode.
  // Merges the JSON object into the run's config key by key (a null is stored as a value).
  Status UpdateConfig(std::string_view json_object);
  // Removes these keys from the run's config.
  Status RemoveConfigKeys(const std::vector<std::string>& keys);
  // Sets summary keys (a null deletes one). A key set here keeps the value set until this writer
  // logs it again: the last write wins, as in the vendor's SDK (see Finish). Only the primary
  // writer's are sent in shared mode: a worker's stay local (a warning says so, once a run).
  Status UpdateSummary(std::string_view json_object);
  // The last value this writer logged of each key whose last write was a Log, not an
  // UpdateSummary after it (what the run's summary shows for it; the Python SDK's run.summary
  // reads it, with the keys it set over it). Empty for a disabled run.
  std::map<std::string, double> LastLoggedValues() const;
  // Changes the run's fields after Init (sent like config updates, in order with the data).
  // In shared mode only the primary writer's changes reach the server.
  Status SetName(std::string_view name);
  Status SetGroup(std::string_view group);
  Status SetJobType(std::string_view job_type);
  Status SetNotes(std::string_view notes);
  Status SetTags(const std::vector<std::string>& tags);
  // Writes a console line as if the process had printed it.
  void Print(std::string_view text, bool is_stderr = false);
  // Ends this writer: flushes what is pending to the agent (bounded by finish_timeout_s) and
  // reports the exit code (0 finished, else failed). Idempotent. `state` may force "killed",
  // "preempted" or "crashed".
  //
  // The run's summary keeps the last logged value of every key (sent at Finish and about every
  // 10 s while the run goes on), except keys set by UpdateSummary, which keep the value set
  // until the key is logged again (the last write wins); in shared mode only the writer that
  // controls the run (primary) sends these values, and the server's summary follows the
  // primary's series (a worker's later log of a key it set does not replace the value set).
  //
  // Runs nobody finished are finished when the process exits: through exit() or a return from
  // main with that exit status (0 finished, else failed), after an uncaught exception
  // (std::terminate) as crashed, and on SIGTERM as killed (see Settings::handle_sigterm).
  //
  // Finish first waits (within finish_timeout_s) for the versions this run logged to be
  // committed, drawing their progress on stderr (a bar on a terminal, a line per file
  // otherwise); past the timeout it says what remains: the agent goes on uploading it.
  Status Finish(int exit_code = 0, std::string_view state = {});

  // ---- alerts (docs/cpp.md "Alerts") ----
  // Raises an alert from the training code. It goes the way logged data goes (in order after
  // it, durable at the agent, uploaded when the server is reachable) to this writer's alerts on
  // the server, which keeps one open alert per writer and title (a repeat bumps its count) and
  // notifies the project's webhooks. `title`: 1..256 bytes of UTF-8; `text`: up to 64 KiB of
  // UTF-8; `level` (the string overload): "INFO", "WARN" or "ERROR". With wait_duration_s > 0,
  // a call whose title this run sent less than that many seconds ago is not sent (and is not an
  // error), as the vendor SDK's wait_duration. kInvalidArgument naming the field ("alert
  // title: ..."); kFailedPrecondition after Finish; kUnavailable, nothing sent, when the node's
  // agent is older than this library and cannot take alerts (the message says how to replace
  // it). Any writer may raise alerts (shared mode too); a disabled run checks the arguments and
  // sends nothing.
  Status Alert(std::string_view title, std::string_view text, AlertLevel level = AlertLevel::kInfo,
               double wait_duration_s = 0);
  Status Alert(std::string_view title, std::string_view text, std::string_view level,
               double wait_duration_s = 0);

  // ---- artifacts (docs/artifacts.md) ----
  // Checks the names and paths at once (kInvalidArgument), then hashes the files (SHA-256) and
  // copies those not `immutable` into the agent's staging directory on a background thread,
  // and hands the version to the agent, which uploads it. Returns the version's id at once.
  Result<std::string> LogArtifact(const Artifact& artifact);
  // Hands the agent a manifest whose files are hashed and staged already (the Python SDK): an
  // artifact intent (docs/formats.md); "run" and "writer" are set here. Returns its id.
  Result<std::string> LogArtifactIntent(std::string_view intent_json);
  // The state of a version this run logged (asks the agent).
  Result<ArtifactVersion> ArtifactState(const std::string& id);
  // Waits until the version is committed or failed, or `timeout_s` passed (< 0: no limit;
  // kDeadlineExceeded then). A failed version is kFailedPrecondition with the server's message.
  Result<ArtifactVersion> WaitArtifact(const std::string& id, double timeout_s = -1);
  // Where clients stage copies of artifact files for the agent (empty when unknown).
  std::string artifact_staging_dir() const;
  // The server's media limits (its --max-media-file-bytes and --max-media-per-step) as its
  // answer to this writer's join said; 0 when not known (offline, or no answer yet).
  int64_t max_media_file_bytes() const;
  int64_t max_media_per_step() const;

  bool disabled() const;
  const std::string& id() const;
  const std::string& name() const;  // the latest of Init's / the server's name and SetName
  const std::string& entity() const;
  const std::string& project() const;
  const std::string& label() const;
  // The run's fields as the server held them when this writer joined (those of a resumed run):
  // a JSON object's text with "group", "job_type", "notes", "tags", "config" and "summary" (the
  // config, then the summary, left out when the text would be over 4 MiB with it); empty when not
  // known (offline, or the server did not answer within Init).
  const std::string& run_fields() const;
  std::string url() const;  // the run's page on the server
  int64_t step() const;     // the writer's current step
  // Values ignored: out-of-order steps, and keys the server would refuse (the key rule above),
  // which are dropped at the call so that the rest of a batch is never refused with them; and
  // values given up for want of an agent (over 512 MiB queued with none reachable, or never sent
  // when Finish gave up: its error says how many).
  int64_t dropped() const;
  bool offline() const;     // true when the run is buffering locally (server unreachable/offline)

  struct Impl;

 private:
  explicit Run(std::shared_ptr<Impl> impl);
  Status PatchFields(std::string body_json);
  friend Result<Run> Init(const Settings& settings);
  std::shared_ptr<Impl> impl_;
};

// Starts (or joins, in shared mode) a run and returns within settings.init_timeout_s.
Result<Run> Init(const Settings& settings);

// Makes sure a node agent is running so that later Init calls (e.g. in Pool children) are fast.
Status Setup(const Settings& settings = {});

}  // namespace cohort
