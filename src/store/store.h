// The persistence interfaces of the server, one per concern: RunStore (runs), WriterStore
// (writers, their states and stream positions), DataStore (metrics and console lines), MetaStore
// (saved views, API keys, browser sessions, run files), AdminStore (retention, dump),
// ArtifactStore (artifact versions, aliases, lineage, blobs held), AlertStore (alert rules,
// alerts, their events) and WebhookStore (alert webhooks, their delivery log). Store is all of them, as a backend implements them: SqliteStore
// (embedded) and PostgresStore (scale-out), both over the shared SQL store (sql/sql_store.h),
// both passing the conformance suite in store_conformance.h. Code that needs one concern takes
// that interface.
//
// Threading: every method may be called concurrently from any thread. Implementations
// serialise writes as their engine requires and keep each call atomic: a call that returns an
// error has changed nothing.
//
// Scoping: every call that names a run takes a RunRef (entity, project, run id); a run of another
// entity is simply not found. Authorization is the API layer's job.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "store/alert_types.h"
#include "store/artifact_types.h"
#include "store/console_types.h"
#include "store/dump_format.h"
#include "store/histogram_types.h"
#include "store/history_types.h"
#include "store/ingest_batch.h"
#include "store/media_types.h"
#include "store/meta_types.h"
#include "store/run_types.h"
#include "store/webhook_types.h"

namespace cohort::store {

class RunStore {
 public:
  virtual ~RunStore() = default;
  // Creates the run, or updates the given fields of an existing one (resume). Returns the run
  // and whether it was created. A fresh run is kPending until a writer joins.
  virtual Result<std::pair<RunRecord, bool>> UpsertRun(const RunUpsert& upsert) = 0;
  virtual Result<RunRecord> GetRun(const RunRef& ref) = 0;
  virtual Result<RunRecord> PatchRun(const RunRef& ref, const RunPatch& patch) = 0;
  virtual Result<RunPage> ListRuns(const RunQuery& query) = 0;
  virtual Result<std::vector<GroupInfo>> ListGroups(const std::string& entity,
                                                    const std::string& project) = 0;
  virtual Result<std::vector<ProjectInfo>> ListProjects(const std::string& entity) = 0;
  // Deletes a run and everything under it.
  virtual Status DeleteRun(const RunRef& ref) = 0;
};

// A writer MarkStaleWritersCrashed marked crashed.
struct CrashedWriter {
  RunRef run;
  std::string label;
  int64_t heartbeat_ms = 0;  // its last heartbeat
};

// What one MarkStaleWritersCrashed did.
struct StaleSweep {
  std::vector<CrashedWriter> crashed;  // the writers it marked crashed
  // The runs it ended as orphaned (DeriveOrphanedRunEnd, run_state.h): no writer end carries
  // these ends (their writers' ends may have been handled long before), so the caller tells the
  // alert rules itself.
  std::vector<RunRef> orphans_ended;
};

// A writer that ended and whose end the alert rules have not handled yet (ListUnhandledWriterEnds).
struct EndedWriter {
  RunRef run;
  std::string label;
  RunState state = RunState::kFinished;
  std::optional<int> exit_code;
  int64_t heartbeat_ms = 0;  // its last heartbeat
  int64_t finished_ms = 0;   // when it ended (the key of MarkWriterEndHandled)
  bool run_ended = false;    // the run has no running writer left
};

class WriterStore {
 public:
  virtual ~WriterStore() = default;
  // Joins (or re-joins, by label) a writer; the run becomes running. Returns the writer, whose
  // last_seq/next_step let a re-joining client continue.
  virtual Result<WriterRecord> JoinWriter(const RunRef& ref, const WriterJoin& join) = 0;
  virtual Result<std::vector<WriterRecord>> ListWriters(const RunRef& ref) = 0;
  // Records a writer's heartbeat: its and its run's heartbeat time move up to now_ms, never back.
  // A heartbeat comes from a live writer: one marked crashed without an exit code at least
  // kReviveAfterCrashMs (run_state.h) before now_ms (the crash sweep's mark after a silence: the
  // server or the network was down, the agent's uploads were backing off) is running again, its
  // end unhandled no more, and the run's state is recomputed. True when that happened.
  // kNotFound for an unknown writer.
  virtual Result<bool> Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) = 0;
  // Records many writers' heartbeats at once (the server coalesces heartbeats and writes them
  // about once a second) in one transaction, each as Heartbeat does. A writer (or run) that does
  // not exist is skipped.
  virtual Result<HeartbeatsApplied> Heartbeats(const std::vector<HeartbeatUpdate>& updates) = 0;
  // Ends a writer with `state` (finished/failed/killed/preempted/crashed) and exit code, and
  // recomputes the run's state (run_state.h).
  virtual Result<WriterRecord> FinishWriter(const RunRef& ref, const std::string& label,
                                            RunState state, std::optional<int> exit_code,
                                            int64_t now_ms) = 0;
  // Marks running writers whose last heartbeat is older than `stale_before_ms` crashed and
  // recomputes their runs' states; ends the running runs silent since then whose writers all
  // ended without a controlling writer among them (orphaned). Returns the writers it marked and
  // the orphaned runs it ended.
  virtual Result<StaleSweep> MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) = 0;
  // The alert rules' input, durable: FinishWriter and MarkStaleWritersCrashed mark each writer
  // they end "unhandled" in their own transaction, so that its end is alerted on even when the
  // server dies right after (another server, or this one restarted, finds it here). A writer
  // that joins again is handled (a new process). Oldest end first, at most `limit`.
  virtual Result<std::vector<EndedWriter>> ListUnhandledWriterEnds(int limit) = 0;
  // Marks the end of the writer at `finished_ms` handled (an end after a later re-join stays
  // unhandled).
  virtual Status MarkWriterEndHandled(const RunRef& ref, const std::string& label,
                                      int64_t finished_ms) = 0;
  // Renames a writer; its series, console lines and stream positions follow. kAlreadyExists
  // when another writer of the run has the label `to`.
  virtual Result<WriterRecord> RenameWriter(const RunRef& ref, const std::string& from,
                                            const std::string& to) = 0;
  // Stream positions of every writer of the run (see StreamPosition): label -> stream -> next
  // offset (the W&B compatibility layer, src/server/compat).
  virtual Result<std::map<std::string, std::map<std::string, int64_t>>> ListStreamPositions(
      const RunRef& ref) = 0;
};

class DataStore {
 public:
  virtual ~DataStore() = default;
  // Stores one batch of one writer atomically, at most once per (writer, batch.seq).
  // Also counts as a heartbeat of the writer.
  virtual Result<IngestResult> Ingest(const RunRef& ref, const std::string& label,
                                      const IngestBatch& batch, int64_t now_ms) = 0;
  // Series of a run (user and system), with counts and step ranges.
  virtual Result<std::vector<SeriesInfo>> ListSeries(const RunRef& ref) = 0;
  virtual Result<std::vector<SeriesData>> QueryHistory(const HistoryQuery& query) = 0;
  // Histogram keys of a run per writer, with their step counts and ranges (SeriesInfo).
  virtual Result<std::vector<SeriesInfo>> ListHistograms(const RunRef& ref) = 0;
  // Histogram values by key and writer (histogram_types.h), in key, writer, step order.
  virtual Result<std::vector<HistogramSeries>> QueryHistograms(const HistogramQuery& query) = 0;
  // Media keys of a run per writer, with their type, row counts and step ranges.
  virtual Result<std::vector<MediaKeyInfo>> ListMedia(const RunRef& ref) = 0;
  // Media rows (media_types.h) in key, writer, step, index order; at most query.limit.
  virtual Result<std::vector<MediaRecord>> QueryMedia(const MediaQuery& query) = 0;
  // A media row of the run whose blob is `sha256` (the first by key, step, index); kNotFound
  // when the run has none.
  virtual Result<MediaRecord> FindMedia(const RunRef& ref, const std::string& sha256) = 0;
  // A media row of a run of `entity` naming the blob `sha256` with a size other than `size`; none
  // (nullopt) otherwise. A row may name a blob before it is uploaded, with the size its client
  // declared, which the media limits were checked against: the upload must bring that size.
  virtual Result<std::optional<MisSizedMedia>> FindMediaOfOtherSize(const std::string& entity,
                                                                    const std::string& sha256,
                                                                    int64_t size) = 0;
  // The media rows of the run that await a file by path (MediaPoint::path) which the run now
  // holds as a blob (a run file with a sha256: its upload came) get that blob and size, in one
  // statement; `path` non-empty: only the rows awaiting that file. Returns how many. Those rows
  // entered with size 0, so the run's media budget is checked here: kPayloadTooLarge, and
  // nothing attached, when the run would then hold more than `max_run_media_bytes` (0: no
  // budget) bytes of media.
  virtual Result<int64_t> AttachUploadedMedia(const RunRef& ref, const std::string& path,
                                              int64_t max_run_media_bytes) = 0;
  virtual Result<std::vector<ConsoleLine>> QueryConsole(const ConsoleQuery& query) = 0;
  // Counts the lines of a console filter (query.limit is ignored) and returns the id of every
  // `stride`-th one (stride >= 1) without reading the lines themselves: the web UI's log index.
  virtual Result<ConsoleIndex> IndexConsole(const ConsoleQuery& query, int64_t stride) = 0;
};

class MetaStore {
 public:
  virtual ~MetaStore() = default;
  // ---- saved views ----
  virtual Result<ViewRecord> CreateView(const ViewRecord& view) = 0;
  virtual Result<std::vector<ViewRecord>> ListViews(const std::string& entity,
                                                    const std::string& project) = 0;
  virtual Result<ViewRecord> UpdateView(const ViewRecord& view) = 0;  // by entity+project+id
  virtual Status DeleteView(const std::string& entity, const std::string& project, int64_t id) = 0;

  // ---- API keys ----
  virtual Result<ApiKeyRecord> CreateApiKey(const ApiKeyRecord& key) = 0;
  // Looks up a non-revoked key by the hash of its secret.
  virtual Result<ApiKeyRecord> FindApiKey(const std::string& hash) = 0;
  virtual Result<std::vector<ApiKeyRecord>> ListApiKeys(const std::string& entity) = 0;
  virtual Status RevokeApiKey(const std::string& entity, int64_t id) = 0;
  // Keys not revoked; with `with_revoked`, every key ever made (whether a server used the store).
  virtual Result<int64_t> CountApiKeys(bool with_revoked = false) = 0;
  // Creates `key` only when the store holds no key that is not revoked, atomically: of several
  // servers bootstrapping one empty database at once, exactly one creates its key. Returns
  // nullopt (and creates nothing) when such a key exists.
  virtual Result<std::optional<ApiKeyRecord>> CreateFirstApiKey(const ApiKeyRecord& key) = 0;

  // ---- browser sessions and one-time login tokens (meta_types.h SessionRecord) ----
  // Stores a login token or a session for key `s.key_id`; kNotFound when that key does not exist
  // or is revoked.
  virtual Status CreateSession(const SessionRecord& s) = 0;
  // Consumes the login token whose hash is `token_hash` and stores `session` for the token's key,
  // atomically: of several calls with one token, exactly one succeeds. kNotFound (and nothing
  // changed) when the token is unknown, used, expired at `now_ms`, or its key is revoked.
  // Returns the key the session acts for.
  virtual Result<ApiKeyRecord> RedeemLoginToken(const std::string& token_hash,
                                                const SessionRecord& session, int64_t now_ms) = 0;
  // The key a session acts for; kNotFound unless the session exists, has not expired at `now_ms`
  // and its key is not revoked.
  virtual Result<ApiKeyRecord> FindSession(const std::string& hash, int64_t now_ms) = 0;
  // Ends a session (logout) or drops a login token; kNotFound when there is none.
  virtual Status DeleteSession(const std::string& hash) = 0;
  // Deletes the sessions and login tokens that expired at `now_ms` or whose key is revoked.
  // Returns how many.
  virtual Result<int64_t> PruneSessions(int64_t now_ms) = 0;

  // ---- run files (W&B clients upload config.yaml, requirements.txt, output.log...) ----
  // Stores a file of the run, replacing one of the same name. Returns it without its data. A
  // file with a sha256 keeps no data: its bytes are that blob of the entity (RunFile::sha256).
  virtual Result<RunFile> PutRunFile(const RunRef& ref, const RunFile& file) = 0;
  // The run's files by name, without their data.
  virtual Result<std::vector<RunFile>> ListRunFiles(const RunRef& ref) = 0;
  virtual Result<RunFile> GetRunFile(const RunRef& ref, const std::string& name) = 0;
};

class AdminStore {
 public:
  virtual ~AdminStore() = default;
  // ---- retention ----
  // Forgets the exactly-once records (writer, seq) of batches stored before `stored_before_ms`.
  // A writer keeps the highest forgotten seq: a batch that arrives later with a seq at or below
  // it is acknowledged as a duplicate and not stored, so pruning never stores a retry twice.
  // Returns the number of records removed.
  virtual Result<int64_t> PruneBatches(int64_t stored_before_ms) = 0;
  // Gives space the store no longer uses back to the file system, about `max_bytes` per call at
  // most (whole pages), where the engine leaves that to the store (SQLite: free pages, once
  // many, or whatever their number when `stopping`: this server stops and will not reuse them;
  // PostgreSQL: 0, its VACUUMs make space reusable). Returns the bytes given back.
  virtual Result<int64_t> ReleaseFreeSpace(int64_t max_bytes, bool stopping) = 0;

  // ---- dump (store/dump_format.h: `cohort export`, `import`, `migrate`) ----
  // Calls `sink` with every row of every dump table, in DumpTables() order, all from one
  // snapshot. Stops at (and returns) the first error of `sink`.
  virtual Status Export(const std::function<Status(const DumpRecord&)>& sink) = 0;
  // Stores `records` (rows of a dump exported by `from.source`) in one transaction, keeping
  // their keys; a row whose key (or unique columns) the store holds already is skipped, so a
  // dump imported twice is stored once. Returns the number of rows stored.
  virtual Result<int64_t> Import(const std::vector<DumpRecord>& records,
                                 const DumpHeader& from) = 0;
  // After the last Import: moves the store's key counters past the imported keys.
  virtual Status FinishImport() = 0;
  // Rows per dump table.
  virtual Result<DumpCounts> CountRows() = 0;
};

// Artifacts (docs/artifacts.md): versions of collections, their manifests, aliases and lineage,
// and which blobs each entity holds. The bytes are in a blob store (blob/blob_store.h), not here.
class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // ---- blobs an entity holds ----
  // Records that `entity` holds the blob (it uploaded it, checked), and its MD5 (base64) when
  // not empty (the W&B clients name files by it). Idempotent; a blob recorded again (uploaded
  // again) takes the later time, so that gc's grace period counts from the last upload: what
  // names the bytes (a version's commit) may come up to that long after.
  virtual Status RecordBlob(const std::string& entity, const std::string& sha256, int64_t size,
                            int64_t now_ms, const std::string& md5) = 0;
  // Moves the recorded time of a blob the entity holds to `now_ms` when that is more than
  // limits::kBlobRetouchMs later; records nothing when it holds none. Called before an upload is
  // told the blob is held (it then skips the bytes and logs what names the blob): gc's grace
  // period counts from here, so the record cannot be forgotten before that row arrives.
  virtual Status TouchBlob(const std::string& entity, const std::string& sha256,
                           int64_t now_ms) = 0;
  // The blobs the entity holds by the MD5s (base64) of their uploads.
  virtual Result<std::map<std::string, BlobByMd5>> BlobsByMd5(
      const std::string& entity, const std::vector<std::string>& md5s) = 0;
  // The MD5s (base64) recorded for blobs the entity holds, by SHA-256 (absent: none recorded).
  virtual Result<std::map<std::string, std::string>> Md5sOfBlobs(
      const std::string& entity, const std::vector<std::string>& sha256s) = 0;
  // ---- garbage collection (docs/artifacts.md, "Garbage collection") ----
  // Blobs held since before `recorded_before_ms` that nothing of their entity references (a
  // version's file or W&B manifest, a draft's manifest, a media row or a file of one of its
  // runs).
  virtual Result<std::vector<HeldBlob>> UnreferencedBlobs(int64_t recorded_before_ms) = 0;
  // The blobs of the table media rows of every run (entity, sha256, size; created_ms 0): the
  // media cells of those documents reference blobs too (core/table_cells.h), which `cohort gc`
  // reads them for.
  virtual Result<std::vector<HeldBlob>> TableBlobs() = 0;
  // Forgets that the entity holds the blob when it still is unreferenced and recorded before
  // `recorded_before_ms`, atomically with respect to commits (which lock the rows they
  // reference). Returns whether it did.
  virtual Result<bool> ForgetBlob(const std::string& entity, const std::string& sha256,
                                  int64_t recorded_before_ms) = 0;
  // Whether any entity holds the blob.
  virtual Result<bool> BlobHeldByAnyEntity(const std::string& sha256) = 0;
  // ---- drafts: versions the W&B clients create before they upload ----
  virtual Result<ArtifactDraft> CreateArtifactDraft(const ArtifactDraft& draft) = 0;
  // kNotFound unless the entity has the draft.
  virtual Result<ArtifactDraft> GetArtifactDraft(const std::string& entity, int64_t pk) = 0;
  // The committed version of the entity's draft whose W&B client ID is `client_id` (the newest
  // when the client gave one ID twice); kNotFound while there is none.
  virtual Result<ArtifactVersion> ArtifactVersionOfClientId(const std::string& entity,
                                                            const std::string& client_id) = 0;
  virtual Status SetArtifactDraftManifest(const std::string& entity, int64_t pk,
                                          const std::string& sha256) = 0;
  virtual Status SetArtifactDraftVersion(const std::string& entity, int64_t pk,
                                         int64_t version_pk) = 0;
  // The size of each of `sha256s` the entity holds (absent: not held).
  virtual Result<std::map<std::string, int64_t>> HeldBlobs(
      const std::string& entity, const std::vector<std::string>& sha256s) = 0;

  // ---- versions ----
  // Logs a version in one transaction: checks the commit (ValidateArtifactCommit), that the
  // entity holds every blob with exactly its size (kFailedPrecondition naming the first file it
  // does not hold; kInvalidArgument for a size that differs), that the collection's type is
  // `type` (kAlreadyExists otherwise) and that the run exists (kNotFound). When the digest is
  // the latest version's, returns that version (created = false) with the aliases added;
  // otherwise stores version latest + 1, moves "latest" and the aliases to it and records the
  // run's "output" edge.
  virtual Result<ArtifactLogged> CommitArtifact(const ArtifactCommit& commit) = 0;
  virtual Result<std::vector<ArtifactCollection>> ListArtifactCollections(
      const std::string& entity, const std::string& project) = 0;
  // Newest first.
  virtual Result<std::vector<ArtifactVersion>> ListArtifactVersions(
      const std::string& entity, const std::string& project, const std::string& name) = 0;
  // A version by "v<N>" or by alias; kNotFound naming it otherwise.
  virtual Result<ArtifactVersion> GetArtifactVersion(const std::string& entity,
                                                     const std::string& project,
                                                     const std::string& name,
                                                     const std::string& version_or_alias) = 0;
  // A version by its key (the W&B clients' artifact ids); kNotFound unless it is the entity's.
  virtual Result<ArtifactVersion> GetArtifactVersionByPk(const std::string& entity,
                                                         int64_t pk) = 0;
  // The manifest of a version (from GetArtifactVersion), by path.
  virtual Result<std::vector<ArtifactFile>> ListArtifactFiles(const ArtifactVersion& version) = 0;
  virtual Result<ArtifactFile> GetArtifactFile(const ArtifactVersion& version,
                                               const std::string& path) = 0;
  // The runs that logged and used a version, oldest first.
  virtual Result<std::vector<ArtifactUse>> ListArtifactUses(const ArtifactVersion& version) = 0;
  // Records that `run` (any project of the version's entity) used the version: an "input" edge
  // (once per run and writer). Returns the version.
  virtual Result<ArtifactVersion> UseArtifact(const std::string& project, const std::string& name,
                                              const std::string& version_or_alias,
                                              const RunRef& run, const std::string& writer,
                                              int64_t now_ms) = 0;
  // Sets (or moves) `alias` (ValidateAliasName) to a version of the same collection.
  virtual Result<ArtifactVersion> SetArtifactAlias(const std::string& entity,
                                                   const std::string& project,
                                                   const std::string& name,
                                                   const std::string& alias,
                                                   const std::string& version_or_alias) = 0;
  // kNotFound when the collection has no such alias.
  virtual Status DeleteArtifactAlias(const std::string& entity, const std::string& project,
                                     const std::string& name, const std::string& alias) = 0;
  // Deletes version "v<N>" with its aliases and edges; "latest" moves to the newest remaining
  // version. Its blobs stay until a garbage collection finds them unreferenced.
  virtual Status DeleteArtifactVersion(const std::string& entity, const std::string& project,
                                       const std::string& name, const std::string& version) = 0;
  // The versions a run logged or used (its lineage edges), oldest first.
  virtual Result<std::vector<RunArtifact>> ListRunArtifacts(const RunRef& ref) = 0;
};

// Alerts (alert_types.h, docs/api.md "Alerts"): rules per project, alerts and their events.
class AlertStore {
 public:
  virtual ~AlertStore() = default;
  // Opens an alert or, when one is open for the same (entity, project, run, writer, condition
  // key), bumps it (count, last_seen_ms, evidence). An alert raised by code (source "code") is
  // a notification each time: it opens a new alert, and the open one of its key is resolved
  // without an event; the same call retried (its evidence, the client's time of the call, the
  // same) bumps it. Returns the alert and whether it was opened now (then one 'opened' event
  // was appended in the same transaction). kResourceExhausted (and
  // nothing stored) when opening it would pass kMaxAlertsOpenedPerProjectPerMinute;
  // kFailedPrecondition (nothing stored) when the raise names a rule deleted or disabled;
  // kNotFound (nothing stored) when its run does not exist (deleted meanwhile);
  // kInvalidArgument for a source or level that is not one of theirs.
  virtual Result<std::pair<AlertRecord, bool>> RaiseAlert(const AlertRaise& raise) = 0;
  // Resolves the open alert of that key, if any (appending a 'resolved' event). Returns whether
  // one was open.
  virtual Result<bool> ResolveAlert(const std::string& entity, const std::string& project,
                                    const std::string& run_id, const std::string& writer_label,
                                    const std::string& condition_key, int64_t now_ms) = 0;
  // Resolves every open alert of the writer whose source is `source` (each with its event).
  // Returns how many.
  virtual Result<int64_t> ResolveWriterAlerts(const std::string& entity, const std::string& project,
                                              const std::string& run_id,
                                              const std::string& writer_label,
                                              const std::string& source, int64_t now_ms) = 0;
  // Resolves the open alerts of the rules `rule_ids` of the project (each with its event): of
  // the run `run_id` only when it is set, and of its writer `writer_label` only when that is set
  // ("" = the run-level alerts). Returns how many.
  virtual Result<int64_t> ResolveRuleAlerts(const std::string& entity, const std::string& project,
                                            const std::vector<int64_t>& rule_ids,
                                            const std::optional<std::string>& run_id,
                                            const std::optional<std::string>& writer_label,
                                            int64_t now_ms) = 0;
  // Open alerts of every project raised by rules of the kinds `kinds` (oldest first, at most
  // `limit`), each with whether its writer (its run, for a run-level alert) is still running:
  // what a server restarted takes over from the one that opened them.
  virtual Result<std::vector<OpenRuleAlert>> ListOpenRuleAlerts(
      const std::vector<std::string>& kinds, int limit) = 0;
  virtual Result<AlertRecord> GetAlert(const std::string& entity, const std::string& project,
                                       int64_t id) = 0;
  virtual Result<std::vector<AlertRecord>> ListAlerts(const AlertQuery& query) = 0;
  // Marks the alert acknowledged by `by` (the first ack is kept).
  virtual Result<AlertRecord> AckAlert(const std::string& entity, const std::string& project,
                                       int64_t id, const std::string& by, int64_t now_ms) = 0;
  // Events of every project with id > after_id, in id order, at most `limit`. Ids grow in commit
  // order (a reader paging with after_id skips none).
  virtual Result<std::vector<AlertEvent>> ListAlertEvents(int64_t after_id, int limit) = 0;

  // ---- rules ----
  // kAlreadyExists when the project has a rule of that name.
  virtual Result<AlertRule> CreateAlertRule(const AlertRule& rule) = 0;
  // Replaces name, kind, spec, level and enabled of the rule (entity + project + id); a rule
  // disabled, or given another kind or spec, resolves its open alerts in the same transaction.
  virtual Result<AlertRule> UpdateAlertRule(const AlertRule& rule) = 0;
  // Deletes the rule and resolves its open alerts, in one transaction. Rule ids are never given
  // again (a later rule cannot inherit an old rule's alerts).
  virtual Status DeleteAlertRule(const std::string& entity, const std::string& project,
                                 int64_t id) = 0;
  virtual Result<std::vector<AlertRule>> ListAlertRules(const std::string& entity,
                                                        const std::string& project) = 0;
  virtual Result<AlertRule> GetAlertRule(const std::string& entity, const std::string& project,
                                         int64_t id) = 0;
  // Creates `defaults` (builtin rules) for the project the first time it is called for that
  // project, atomically (of several servers, one creates them); later calls, even after the
  // rules were edited or deleted, change nothing. Returns whether it created them.
  virtual Result<bool> InstallDefaultAlertRules(const std::string& entity,
                                                const std::string& project,
                                                const std::vector<AlertRule>& defaults,
                                                int64_t now_ms) = 0;
};

// Alert webhooks and their delivery log (webhook_types.h, docs/api.md "Alert webhooks"). The
// deliveries are claimed before they are sent, so that of several servers on one database exactly
// one sends each attempt.
class WebhookStore {
 public:
  virtual ~WebhookStore() = default;
  // kAlreadyExists when the project has a webhook of that name.
  virtual Result<WebhookRecord> CreateWebhook(const WebhookRecord& w) = 0;
  virtual Result<WebhookRecord> GetWebhook(const std::string& entity, const std::string& project,
                                           int64_t id) = 0;
  // By name.
  virtual Result<std::vector<WebhookRecord>> ListWebhooks(const std::string& entity,
                                                          const std::string& project) = 0;
  // Replaces name, url, format, min_level and enabled of the webhook (entity, project, id), and
  // its secret when `set_secret`. kNotFound, kAlreadyExists (name taken).
  virtual Result<WebhookRecord> UpdateWebhook(const WebhookRecord& w, bool set_secret) = 0;
  // Deletes the webhook with its delivery log. kNotFound when there is none.
  virtual Status DeleteWebhook(const std::string& entity, const std::string& project,
                               int64_t id) = 0;

  // The id of the last alert event every delivery has been enqueued for (0 at first).
  virtual Result<int64_t> GetDeliveryCursor() = 0;
  // In one transaction: enqueues `intents` (pending, due at now_ms; one per (webhook, event):
  // an intent enqueued before, or for a webhook deleted meanwhile, is skipped) and moves the
  // cursor up to `cursor` (never back). Returns how many were enqueued.
  virtual Result<int64_t> EnqueueDeliveries(const std::vector<DeliveryIntent>& intents,
                                            int64_t cursor) = 0;
  // Claims up to `limit` pending deliveries that are due at `now_ms` and not claimed (or whose
  // claim expired) for `owner` until now_ms + lease_ms, oldest due first, none of a webhook in
  // `skip_webhooks` (those the caller is calling now). Each row is claimed by a conditional
  // update whose affected-row count decides, so concurrent callers (other servers) never get the
  // same delivery.
  virtual Result<std::vector<DeliveryRecord>> ClaimDeliveries(
      const std::string& owner, int64_t now_ms, int64_t lease_ms, int limit,
      const std::vector<int64_t>& skip_webhooks = {}) = 0;
  // Records an attempt of a delivery `owner` claimed: attempts + 1, the status and error, and
  // the state (delivered; pending again at retry_at_ms; failed); releases the claim. Returns
  // false (and changes nothing) when the claim is no longer owner's.
  virtual Result<bool> FinishDelivery(int64_t id, const std::string& owner,
                                      const DeliveryAttempt& attempt) = 0;
  // The delivery log of a webhook of the project, newest first, at most `limit`.
  virtual Result<std::vector<DeliveryRecord>> ListDeliveries(const std::string& entity,
                                                             const std::string& project,
                                                             int64_t webhook_id, int limit) = 0;
  // The project's delivery log across its webhooks (only alert `alert_id`'s when set), newest
  // first, at most `limit`.
  virtual Result<std::vector<DeliveryRecord>> ListProjectDeliveries(
      const std::string& entity, const std::string& project, std::optional<int64_t> alert_id,
      int limit) = 0;
};

// Every concern: what a backend implements and the server holds.
class Store : public RunStore,
              public WriterStore,
              public DataStore,
              public MetaStore,
              public AdminStore,
              public ArtifactStore,
              public AlertStore,
              public WebhookStore {};

// Opens a store from a URL: "sqlite:///path/to/cohort.db" or a bare path (SQLite),
// "postgresql://..." (PostgreSQL). Creates the schema of a new database (sql/sql_schema.h).
Result<std::unique_ptr<Store>> OpenStore(const std::string& url);

// Opens the store of servers that ran already, for a tool acting on their data (`cohort gc`,
// `cohort keys`): kNotFound when `url` names no SQLite file (no new one is made), and
// kFailedPrecondition when the store never held an API key (every server makes one when it
// first starts; revoked ones count): a mistyped --data-dir or a missing --store must not look like
// an empty store, which gc would take as "no blob is referenced". `what` names the tool in the
// errors.
Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& url, std::string_view what);

// Whether the store `url` names may be shared by several servers (PostgreSQL): what they keep
// beside it (the blob directory) may be written by the others too.
bool IsSharedStoreUrl(std::string_view url);

// The URL as it may be shown (logs, errors): a password in the user part
// ("postgresql://user:secret@host") or in a "password=" parameter is replaced by "***".
std::string RedactUrl(std::string_view url);

}  // namespace cohort::store
