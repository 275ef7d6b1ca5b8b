// SqlStore: everything both SQL engines share, written once over the connection interface of
// sql_conn.h: runs (with the summary's last values, run_summary.h), writers and their states,
// stream positions, run files, views, API keys, browser sessions, series listing, console
// queries, retention, the dump and deletion. An engine (SqliteStore, PostgresStore) supplies how
// a call gets a connection and a transaction (Run), and the parts where the engines really
// differ: the series write path (Ingest), the history query, console text search, and what an
// import leaves to redo.
//
// Transactions. Every call runs in one transaction of the kind its Access names; a call that
// fails changes nothing. The work of a call may run more than once (PostgreSQL runs a
// transaction again after a deadlock or serialization failure, sql_store.h callers keep no
// state across attempts). Writes lock rows in one order: writer rows, then series rows, then
// the run row (PostgreSQL; a SQLite write transaction excludes every other writer).
//
// Threading: every method is thread-safe (the engine's Run hands each call its own connection).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "store/run_filter.h"
#include "store/run_list_sql.h"
#include "store/sql/run_ingest_cache.h"
#include "store/sql/sql_conn.h"
#include "store/sql/sql_dialect.h"
#include "store/store.h"

namespace cohort::store {

class SqlStore : public Store {
 public:
  Result<std::pair<RunRecord, bool>> UpsertRun(const RunUpsert& upsert) final;
  Result<RunRecord> GetRun(const RunRef& ref) final;
  Result<RunRecord> PatchRun(const RunRef& ref, const RunPatch& patch) final;
  Result<RunPage> ListRuns(const RunQuery& query) final;
  Result<std::vector<GroupInfo>> ListGroups(const std::string& entity,
                                            const std::string& project) final;
  Result<std::vector<ProjectInfo>> ListProjects(const std::string& entity) final;
  Status DeleteRun(const RunRef& ref) final;

  Result<WriterRecord> JoinWriter(const RunRef& ref, const WriterJoin& join) final;
  Result<std::vector<WriterRecord>> ListWriters(const RunRef& ref) final;
  Result<bool> Heartbeat(const RunRef& ref, const std::string& label, int64_t now_ms) final;
  Result<HeartbeatsApplied> Heartbeats(const std::vector<HeartbeatUpdate>& updates) final;
  Result<WriterRecord> FinishWriter(const RunRef& ref, const std::string& label, RunState state,
                                    std::optional<int> exit_code, int64_t now_ms) final;
  Result<StaleSweep> MarkStaleWritersCrashed(int64_t stale_before_ms, int64_t now_ms) final;
  Result<std::vector<EndedWriter>> ListUnhandledWriterEnds(int limit) final;
  Status MarkWriterEndHandled(const RunRef& ref, const std::string& label,
                              int64_t finished_ms) final;
  Result<WriterRecord> RenameWriter(const RunRef& ref, const std::string& from,
                                    const std::string& to) final;
  Result<std::map<std::string, std::map<std::string, int64_t>>> ListStreamPositions(
      const RunRef& ref) final;

  Result<std::vector<SeriesInfo>> ListSeries(const RunRef& ref) final;
  Result<std::vector<ConsoleLine>> QueryConsole(const ConsoleQuery& query) final;
  Result<std::vector<SeriesInfo>> ListHistograms(const RunRef& ref) final;
  Result<std::vector<HistogramSeries>> QueryHistograms(const HistogramQuery& query) final;
  Result<std::vector<MediaKeyInfo>> ListMedia(const RunRef& ref) final;
  Result<std::vector<MediaRecord>> QueryMedia(const MediaQuery& query) final;
  Result<MediaRecord> FindMedia(const RunRef& ref, const std::string& sha256) final;
  Result<std::optional<MisSizedMedia>> FindMediaOfOtherSize(const std::string& entity,
                                                            const std::string& sha256,
                                                            int64_t size) final;
  Result<int64_t> AttachUploadedMedia(const RunRef& ref, const std::string& path,
                                      int64_t max_run_media_bytes) final;

  Result<ViewRecord> CreateView(const ViewRecord& view) final;
  Result<std::vector<ViewRecord>> ListViews(const std::string& entity,
                                            const std::string& project) final;
  Result<ViewRecord> UpdateView(const ViewRecord& view) final;
  Status DeleteView(const std::string& entity, const std::string& project, int64_t id) final;
  Result<ApiKeyRecord> CreateApiKey(const ApiKeyRecord& key) final;
  Result<ApiKeyRecord> FindApiKey(const std::string& hash) final;
  Result<std::vector<ApiKeyRecord>> ListApiKeys(const std::string& entity) final;
  Status RevokeApiKey(const std::string& entity, int64_t id) final;
  Result<int64_t> CountApiKeys(bool with_revoked = false) final;
  Result<std::optional<ApiKeyRecord>> CreateFirstApiKey(const ApiKeyRecord& key) final;
  Status CreateSession(const SessionRecord& s) final;
  Result<ApiKeyRecord> RedeemLoginToken(const std::string& token_hash, const SessionRecord& session,
                                        int64_t now_ms) final;
  Result<ApiKeyRecord> FindSession(const std::string& hash, int64_t now_ms) final;
  Status DeleteSession(const std::string& hash) final;
  Result<int64_t> PruneSessions(int64_t now_ms) final;
  Result<RunFile> PutRunFile(const RunRef& ref, const RunFile& file) final;
  Result<std::vector<RunFile>> ListRunFiles(const RunRef& ref) final;
  Result<RunFile> GetRunFile(const RunRef& ref, const std::string& name) final;

  Status TouchBlob(const std::string& entity, const std::string& sha256, int64_t now_ms) final;
  Status RecordBlob(const std::string& entity, const std::string& sha256, int64_t size,
                    int64_t now_ms, const std::string& md5) final;
  Result<std::map<std::string, BlobByMd5>> BlobsByMd5(const std::string& entity,
                                                      const std::vector<std::string>& md5s) final;
  Result<std::map<std::string, std::string>> Md5sOfBlobs(
      const std::string& entity, const std::vector<std::string>& sha256s) override;
  Result<std::vector<HeldBlob>> UnreferencedBlobs(int64_t recorded_before_ms) final;
  Result<std::vector<HeldBlob>> TableBlobs() final;
  Result<bool> ForgetBlob(const std::string& entity, const std::string& sha256,
                          int64_t recorded_before_ms) final;
  Result<bool> BlobHeldByAnyEntity(const std::string& sha256) final;
  Result<ArtifactDraft> CreateArtifactDraft(const ArtifactDraft& draft) final;
  Result<ArtifactDraft> GetArtifactDraft(const std::string& entity, int64_t pk) final;
  Status SetArtifactDraftManifest(const std::string& entity, int64_t pk,
                                  const std::string& sha256) final;
  Status SetArtifactDraftVersion(const std::string& entity, int64_t pk, int64_t version_pk) final;
  Result<std::map<std::string, int64_t>> HeldBlobs(const std::string& entity,
                                                   const std::vector<std::string>& sha256s) final;
  Result<ArtifactLogged> CommitArtifact(const ArtifactCommit& commit) final;
  Result<std::vector<ArtifactCollection>> ListArtifactCollections(const std::string& entity,
                                                                  const std::string& project) final;
  Result<std::vector<ArtifactVersion>> ListArtifactVersions(const std::string& entity,
                                                            const std::string& project,
                                                            const std::string& name) final;
  Result<ArtifactVersion> GetArtifactVersion(const std::string& entity, const std::string& project,
                                             const std::string& name,
                                             const std::string& version_or_alias) final;
  Result<ArtifactVersion> GetArtifactVersionByPk(const std::string& entity, int64_t pk) final;
  Result<ArtifactVersion> ArtifactVersionOfClientId(const std::string& entity,
                                                    const std::string& client_id) final;
  Result<std::vector<ArtifactFile>> ListArtifactFiles(const ArtifactVersion& version) final;
  Result<ArtifactFile> GetArtifactFile(const ArtifactVersion& version,
                                       const std::string& path) final;
  Result<std::vector<ArtifactUse>> ListArtifactUses(const ArtifactVersion& version) final;
  Result<ArtifactVersion> UseArtifact(const std::string& project, const std::string& name,
                                      const std::string& version_or_alias, const RunRef& run,
                                      const std::string& writer, int64_t now_ms) final;
  Result<ArtifactVersion> SetArtifactAlias(const std::string& entity, const std::string& project,
                                           const std::string& name, const std::string& alias,
                                           const std::string& version_or_alias) final;
  Status DeleteArtifactAlias(const std::string& entity, const std::string& project,
                             const std::string& name, const std::string& alias) final;
  Status DeleteArtifactVersion(const std::string& entity, const std::string& project,
                               const std::string& name, const std::string& version) final;
  Result<std::vector<RunArtifact>> ListRunArtifacts(const RunRef& ref) final;

  Result<WebhookRecord> CreateWebhook(const WebhookRecord& w) final;
  Result<WebhookRecord> GetWebhook(const std::string& entity, const std::string& project,
                                   int64_t id) final;
  Result<std::vector<WebhookRecord>> ListWebhooks(const std::string& entity,
                                                  const std::string& project) final;
  Result<WebhookRecord> UpdateWebhook(const WebhookRecord& w, bool set_secret) final;
  Status DeleteWebhook(const std::string& entity, const std::string& project, int64_t id) final;
  Result<int64_t> GetDeliveryCursor() final;
  Result<int64_t> EnqueueDeliveries(const std::vector<DeliveryIntent>& intents,
                                    int64_t cursor) final;
  Result<std::vector<DeliveryRecord>> ClaimDeliveries(
      const std::string& owner, int64_t now_ms, int64_t lease_ms, int limit,
      const std::vector<int64_t>& skip_webhooks = {}) final;
  Result<bool> FinishDelivery(int64_t id, const std::string& owner,
                              const DeliveryAttempt& attempt) final;
  Result<std::vector<DeliveryRecord>> ListDeliveries(const std::string& entity,
                                                     const std::string& project, int64_t webhook_id,
                                                     int limit) final;
  Result<std::vector<DeliveryRecord>> ListProjectDeliveries(const std::string& entity,
                                                            const std::string& project,
                                                            std::optional<int64_t> alert_id,
                                                            int limit) final;

  Result<int64_t> PruneBatches(int64_t stored_before_ms) final;
  // 0: PostgreSQL's VACUUMs make dead rows' space reusable (SqliteStore overrides).
  Result<int64_t> ReleaseFreeSpace(int64_t /*max_bytes*/, bool /*stopping*/) override {
    return int64_t{0};
  }
  Status Export(const std::function<Status(const DumpRecord&)>& sink) final;
  Result<int64_t> Import(const std::vector<DumpRecord>& records, const DumpHeader& from) final;
  Status FinishImport() final;
  Result<DumpCounts> CountRows() final;

  Result<std::pair<AlertRecord, bool>> RaiseAlert(const AlertRaise& raise) final;
  Result<bool> ResolveAlert(const std::string& entity, const std::string& project,
                            const std::string& run_id, const std::string& writer_label,
                            const std::string& condition_key, int64_t now_ms) final;
  Result<int64_t> ResolveWriterAlerts(const std::string& entity, const std::string& project,
                                      const std::string& run_id, const std::string& writer_label,
                                      const std::string& source, int64_t now_ms) final;
  Result<int64_t> ResolveRuleAlerts(const std::string& entity, const std::string& project,
                                    const std::vector<int64_t>& rule_ids,
                                    const std::optional<std::string>& run_id,
                                    const std::optional<std::string>& writer_label,
                                    int64_t now_ms) final;
  Result<std::vector<OpenRuleAlert>> ListOpenRuleAlerts(const std::vector<std::string>& kinds,
                                                        int limit) final;
  Result<AlertRecord> GetAlert(const std::string& entity, const std::string& project,
                               int64_t id) final;
  Result<std::vector<AlertRecord>> ListAlerts(const AlertQuery& query) final;
  Result<AlertRecord> AckAlert(const std::string& entity, const std::string& project, int64_t id,
                               const std::string& by, int64_t now_ms) final;
  Result<std::vector<AlertEvent>> ListAlertEvents(int64_t after_id, int limit) final;
  Result<AlertRule> CreateAlertRule(const AlertRule& rule) final;
  Result<AlertRule> UpdateAlertRule(const AlertRule& rule) final;
  Status DeleteAlertRule(const std::string& entity, const std::string& project, int64_t id) final;
  Result<std::vector<AlertRule>> ListAlertRules(const std::string& entity,
                                                const std::string& project) final;
  Result<AlertRule> GetAlertRule(const std::string& entity, const std::string& project,
                                 int64_t id) final;
  Result<bool> InstallDefaultAlertRules(const std::string& entity, const std::string& project,
                                        const std::vector<AlertRule>& defaults,
                                        int64_t now_ms) final;

 protected:
  // The transaction a call runs in.
  enum class Access {
    kReadOne,     // one statement, on the primary (read-your-writes)
    kReadOneAny,  // one statement, may read a replica (the UI's lists)
    kRead,        // several statements, one snapshot, on the primary
    kReadAny,     // several statements, one snapshot, may read a replica
    kWrite,       // a write transaction
    kWriteShared  // a small write transaction that may share its commit with concurrent ones
  };
  using Work = std::function<Status(sql::Conn&)>;

  explicit SqlStore(sql::Engine engine) : engine_(engine) {}
  sql::Engine engine() const { return engine_; }

  // Runs `work` on a connection in a transaction of kind `access`, committing when it succeeds
  // and rolling back when it fails.
  virtual Status Run(Access access, const Work& work) = 0;
  // As Run, for work that produces a value.
  template <typename T, typename Fn>
  Result<T> RunFor(Access access, Fn&& fn) {
    std::optional<T> out;
    COHORT_RETURN_IF_ERROR(Run(access, [&](sql::Conn& conn) -> Status {
      Result<T> r = fn(conn);
      if (!r.ok()) return r.status();
      out.emplace(std::move(r).value());
      return Status::Ok();
    }));
    return std::move(*out);
  }
  // Brings the schema to the latest version (sql_schema.h), through Run.
  Status MigrateSchema();
  // kNotFound naming `where` when the database holds no Cohort schema (no schema_version table).
  Status RequireSchema(const std::string& where);
  // Whether `query` (a SELECT) answers a row, in a transaction of `access`.
  Result<bool> Exists(Access access, const std::string& query, const sql::Params& params);

  // ---- engine parts ----
  // The condition on console alias `c` that keeps lines whose text contains `text` (case
  // sensitive), its parameters added to `params`.
  virtual std::string ConsoleTextCondition(const std::string& text, sql::Params* params) const = 0;
  // The conditions of the run list on tags and on config./summary. keys (run_filter.h).
  virtual std::string RunTagCondition(const RunPredicate& p, sql::Params* params) const = 0;
  virtual std::string RunJsonCondition(const RunPredicate& p, sql::Params* params) const = 0;
  // The sort key of a config./summary. sort on the key `path` (run_list_sql.h
  // RunJsonSortExprs): both engines give the same order (run_filter.h JsonSortClass).
  virtual RunJsonSortExprs JsonSortExprs(RunSortField field, const std::vector<std::string>& path,
                                         sql::Params* params) const = 0;
  // After the last Import, in FinishImport's transaction: what the engine derives from imported
  // rows (SQLite: summary pages; PostgreSQL: identity sequences, console numbering).
  virtual Status AfterImport(sql::Conn& conn) = 0;
  // In FinishWriter's transaction, after the writer `writer_pk` ended: what the engine does with
  // a finished writer's series: both seal their tails (sql_tail_seal.h SealWriterTails; SQLite
  // pages the sealed chunks, PostgreSQL forgets the writer's cached tail states). Returns the
  // tail chunk rows it deleted.
  virtual Result<int64_t> AfterWriterFinished(sql::Conn& conn, int64_t writer_pk) = 0;
  // After FinishWriter committed: `tail_rows_deleted` rows of AfterWriterFinished are gone for
  // good (PostgreSQL counts them towards its VACUUM of chunks_tail). Nothing by default.
  virtual void TailRowsCommitted(int64_t tail_rows_deleted) {}

  // ---- shared helpers for the engines' own calls, inside their transactions ----
  // Appends an alert event (sql_store_alerts.cc); on PostgreSQL under a transaction-long
  // advisory lock, so that event ids grow in commit order.
  Status AppendAlertEvent(sql::Conn& conn, const std::string& entity, const std::string& project,
                          int64_t alert_id, const char* kind, int64_t now_ms);
  // Resolves the open alerts that `where` (conditions on alerts over `params`) selects, each
  // with its 'resolved' event. Returns how many.
  Result<int64_t> ResolveOpenAlerts(sql::Conn& conn, const std::string& where, sql::Params params,
                                    int64_t now_ms);
  // One type per key and run (sql_store_key_types.cc): kInvalidArgument naming the key and both
  // types when one of the batch's histogram or media keys is stored with another type in the
  // run (any writer: a scalar series, histograms, media of another type), or one of
  // `new_scalar_keys` (scalar series the batch creates) a histogram or media key of the run.
  // Keys run_cache_ knows are answered without a query.
  Status CheckKeyTypes(sql::Conn& conn, int64_t run_pk, const IngestBatch& batch,
                       const std::vector<std::string>& new_scalar_keys);
  // Stores the batch's histograms for the writer (a step stored before is replaced).
  static Status WriteHistograms(sql::Conn& conn, int64_t run_pk, int64_t writer_pk,
                                const IngestBatch& batch);
  // Stores the batch's media rows for the writer (sql_store_media.cc; a (key, step, index)
  // stored before is replaced), within the media limits of the batch (IngestBatch: rows past
  // them are not stored, counted in result->media_refused; the rest of the batch goes on). The
  // run's media bytes are
  // runs.media_bytes, read with the run row locked and moved in the same transaction (exact with
  // any number of servers on PostgreSQL).
  // `entity`: the run's (a row naming a blob it holds counts the blob's size).
  Status WriteMedia(sql::Conn& conn, const std::string& entity, int64_t run_pk, int64_t writer_pk,
                    const IngestBatch& batch, IngestResult* result);
  // The sizes of the blobs of `sha256s` that `entity` holds (HeldBlobs, in a transaction).
  static Result<std::map<std::string, int64_t>> HeldBlobSizes(
      sql::Conn& conn, const std::string& entity, const std::vector<std::string>& sha256s);
  // `lock`: the row lock (FOR UPDATE) on PostgreSQL.
  static Result<RunRecord> LoadRun(sql::Conn& conn, const RunRef& ref, bool lock = false);
  static Result<RunRecord> LoadRunByPk(sql::Conn& conn, int64_t pk);  // locks it
  static Result<WriterRecord> LoadWriter(sql::Conn& conn, int64_t run_pk, const RunRef& ref,
                                         const std::string& label);
  static Result<std::vector<WriterRecord>> LoadWriters(sql::Conn& conn, int64_t run_pk);
  // Locks the run row, then recomputes its state from its writers (run_state.h) and stores it.
  // Callers have changed (locked) the writer rows first.
  static Status RecomputeRunState(sql::Conn& conn, int64_t run_pk, int64_t now_ms);
  // Ends the running run `run_pk` when every writer of it ended and none is a controlling one
  // (DeriveOrphanedRunEnd); nothing otherwise. Locks the run row first. Returns the run when it
  // ended it.
  static Result<std::optional<RunRef>> EndOrphanedRun(sql::Conn& conn, int64_t run_pk,
                                                      int64_t now_ms);
  // Fails with kFailedPrecondition unless every stream of `positions` of the writer is at its
  // expected offset (a stream never written is at 0); changes nothing.
  static Status CheckStreamPositions(sql::Conn& conn, int64_t writer_pk, const std::string& label,
                                     const std::vector<StreamPosition>& positions);
  // The key budget (ingest_plan.h CheckKeyBudget) of a batch that creates series for `missing`
  // keys (ordered) in run `run_pk` and logs histograms or media: their keys count as keys of the
  // run. Only the histogram and media keys run_cache_ does not know stored in the run are looked
  // up (as only the scalar keys the writer has no series for are in `missing`); the batch's keys
  // go into `note`, known to the cache once the caller settles it as committed.
  Status CheckRunKeys(sql::Conn& conn, const RunRef& ref, int64_t run_pk,
                      const std::vector<std::string>& missing, const IngestBatch& batch,
                      RunIngestCache::Note* note);
  // The WHERE clause of a console filter over `console c` (run, cursor, labels, stream, text),
  // its parameters added to `params`.
  std::string ConsoleFilter(const ConsoleQuery& q, int64_t run_pk, sql::Params* params) const;

  // The runs' known histogram and media keys and media bytes (run_ingest_cache.h); the engines'
  // Ingest settle each call's note after its transaction.
  RunIngestCache run_cache_;

 private:
  const sql::Engine engine_;
};

}  // namespace cohort::store
