// WriterStream: the durable, ordered record stream of one writer (one training process's label
// in one run) and its upload progress.
//
// On disk, a writer directory (<data dir>/<run>/<label>/) holds meta.json (WriterTarget: where
// and as whom to upload) and wal/ (a wal::Log of Records, record.h). Appenders (an agent
// connection, the system monitor) add records; the Sender reads the durable ones in order,
// uploads them and acknowledges them, which lets the WAL delete them.
// When the writer's finish record has been acknowledged the stream is complete and its
// directory can be removed.
//
// Sequence numbers: a stream numbers its records seq = max(highest seq left in the WAL + 1,
// the floor in seq.json, now_ms << 20) at open, then +1 per record; seq.json (rewritten before
// acknowledgements remove records whose seqs it does not cover yet, at most every kSeqReserve
// records) keeps a floor above every seq that left the WAL, so they increase across
// reopenings and restarts even when the wall clock went back. A new directory for the same
// label (a relaunched job) with a clock behind the earlier one's would still number below what
// the server holds, and its batches would be taken for retries (lost): so the seq a batch is
// uploaded with is seq + offset, where the offset is decided when a join is acknowledged
// (NoteJoined: large enough to lift every later record above the writer's last_seq on the
// server) and persisted in seq.json with that join's seq before any later record is uploaded
// (at once when the offset changes; otherwise by the next Peek, off the join's critical path),
// so a join re-sent after a crash keeps the offset and retries keep their uploaded seqs.
//
// Frames: the records a client's frames became carry the client's session and frame number, so
// that a client coming back after its connection broke learns what its session stored
// (LastFrame) and resends only the rest. Acknowledged records leave the WAL, so seq.json also
// keeps, per session, the highest frame uploaded, written before an acknowledgement can delete
// a segment holding a frame it does not cover yet (the active segment is never deleted; its
// records are read back at open). Append drops a client frame not above its session's last one,
// so a frame is stored once even when two connections of the same client overlap.
//
// Clients away: a client that went away without finishing while its process runs on (it gave
// up on a stalled agent) comes back and re-opens its session; clients.json names such clients
// (ClientGone), so that the writer's directory, and with it what its sessions stored, is kept
// until each one is back or its process has ended.
//
// Every file of the directory is read and written through the wal::FileSystem given at opening
// (the WAL's too), so that tests can inject faults below it.
//
// Threading: all methods are thread-safe. Append/Sync are serialised among themselves; the
// upload-side methods (Peek/Pop/FlushAcks) are meant for one Sender thread; progress is guarded
// by a mutex with a condition variable that WaitFor() sleeps on. What each mutex guards, and
// their order, are in the COHORT_GUARDED_BY / COHORT_ACQUIRED_BEFORE annotations below.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/client_process.h"
#include "agent/record.h"
#include "cohort/status.h"
#include "core/mutex.h"
#include "wal/log.h"

namespace cohort::agent {

// The full paths of the entries of `dir` (sorted); empty when it cannot be listed (for a file,
// say). Writer directories are <data dir>/<run>/<label>.
std::vector<std::string> ChildPaths(wal::FileSystem* fs, const std::string& dir);

// Where a writer's records go; persisted as the directory's meta.json.
struct WriterTarget {
  std::string base_url;
  std::string api_key;
  std::string entity;  // empty: the key's entity (GET /api/v1/viewer)
  std::string project;
  std::string run_id;
  std::string label;
  bool offline = false;  // keep the records for `cohort sync`
  int64_t created_ms = 0;
  // The stream's id (WriterStream::stream_id): made by Create, kept by a later Create of the same
  // directory; empty in an older agent's meta.json.
  std::string stream_id;

  std::string ToJson() const;
  static Result<WriterTarget> Parse(std::string_view json);
};

// What the Sender has learned about a stream; sessions wait on it.
struct UploadProgress {
  uint64_t appended_seq = 0;     // highest seq appended (0: none)
  uint64_t done_seq = 0;         // every record with seq <= done_seq is acknowledged or skipped
  int64_t appended_records = 0;  // records in the stream since it was opened (incl. recovered)
  int64_t done_records = 0;      // of those, acknowledged or skipped
  bool finish_appended = false;
  bool complete = false;  // finish appended and every record done
  Status rejected;        // the server refused the run or writer: the stream is dropped
  Status stopped;         // uploads stopped in this process (Sender kStop): nothing dropped
  // The server refuses the stream's key now (401/403, uploads paused until it takes it again):
  // cleared by the next record it takes.
  bool key_refused = false;
  int64_t failures = 0;   // failed upload attempts so far (network, 5xx, 429)
  Status last_failure;
  // Records the server refused for good (a 4xx naming the record: over a limit, a key of another
  // type), each dropped from the stream; the last refusal. cohort sync reports them as errors.
  int64_t refused = 0;
  Status last_refusal;
  bool joined = false;    // a writer join was acknowledged
  int64_t next_step = 0;  // from the last acknowledged join
  // The server's media limits, from the last acknowledged join (0: not said).
  int64_t max_media_file_bytes = 0;
  int64_t max_media_per_step = 0;
  std::string entity;     // as resolved
  std::string run_name;   // from the last acknowledged run upsert
  // The run's group, job_type, notes, tags, config and summary as the server holds them, from
  // the last acknowledged run upsert (RunFieldsOfAnswer: a JSON object's text; null: not known).
  // Shared: progress() is copied in every Sender loop, and a summary may be megabytes.
  std::shared_ptr<const std::string> run_fields;
};

// The body of a writer finish record: {"exit_code": n, "state": "..."} (each when given).
std::string WriterFinishBody(std::optional<int> exit_code, const std::string& state);

class WriterStream {
 public:
  static constexpr char kMetaFile[] = "meta.json";
  static constexpr char kWalDir[] = "wal";
  static constexpr char kFinishedMarker[] = "FINISHED";
  static constexpr char kSeqFile[] = "seq.json";
  static constexpr char kClientsFile[] = "clients.json";
  static constexpr uint64_t kSeqReserve = uint64_t{1} << 20;

  // Opens the stream in `dir`, creating it (and meta.json from `target`) when absent. An
  // existing stream keeps its records; its meta.json is replaced by `target`.
  // kFailedPrecondition when another process holds the directory.
  static Result<std::shared_ptr<WriterStream>> Create(
      const std::string& dir, const WriterTarget& target,
      wal::FileSystem* fs = wal::FileSystem::Default());
  // Opens an existing stream (recovery, `cohort sync`). kNotFound without meta.json.
  static Result<std::shared_ptr<WriterStream>> OpenExisting(
      const std::string& dir, wal::FileSystem* fs = wal::FileSystem::Default());
  ~WriterStream();

  const WriterTarget& target() const { return target_; }
  // Uploads to another server or with another key (cohort sync). Call before the stream is
  // handed to a Sender; not thread-safe.
  void Retarget(const std::string& base_url, const std::string& api_key);
  const std::string& dir() const { return dir_; }

  // The WAL is broken (a failed sync): nothing more can be appended to this stream; a stream
  // opened anew on the directory recovers what is durable. Takes no lock.
  bool broken() const { return broken_.load(); }

  // ---- appending ----
  // Appends one record; it is durable after the next Sync(). Returns its seq.
  Result<uint64_t> Append(RecordKind kind, uint64_t session, uint64_t frame, std::string_view body)
      COHORT_EXCLUDES(append_mu_);
  // Appends the record of a client's frame (a batch or a run patch) unless the session already
  // stored a frame numbered `frame` or higher: false then, and nothing appended.
  Result<bool> AppendFrame(RecordKind kind, uint64_t session, uint64_t frame, std::string_view body)
      COHORT_EXCLUDES(append_mu_);
  Status Sync() COHORT_EXCLUDES(append_mu_);
  // Highest frame of `session` stored: appended to this directory since it was created,
  // whether still in the WAL or uploaded and acknowledged (durable after Sync).
  uint64_t LastFrame(uint64_t session) const COHORT_EXCLUDES(append_mu_);

  // ---- clients ----
  enum class Gone {
    kBack,     // another connection of the session is attached: nothing recorded
    kCrashed,  // the finish record appended
    kKept,     // the process runs on: recorded in clients.json, then the finish appended
  };
  // The client of `session` went away without finishing. Unless it is back already (another
  // connection of the session attached), appends (and syncs) the writer finish record
  // `finish_body`, first recording `process` in clients.json when it still runs: it may come
  // back and re-open the session, and the directory must outlive its finish until then. *gone
  // says which. Atomic with respect to Attach, so that a finish never lands after the returned
  // client's join.
  Status ClientGone(uint64_t session, const std::optional<ClientProcess>& process,
                    std::string_view finish_body, Gone* gone) COHORT_EXCLUDES(clients_mu_);
  // The client of `session` has re-opened it (its join is durable): no longer awaited. True
  // when it was.
  Result<bool> ClientBack(uint64_t session) COHORT_EXCLUDES(clients_mu_);
  // The process of `session`'s client while it writes (from its connection), kept in
  // clients.json: an agent that restarts after it and the client were both killed finds there
  // that the writer's client ended (FinishEndedClients), instead of a writer left running and a
  // directory kept for ever. Forgotten once the session finished (ClientFinished) or went away
  // (ClientGone). An error when clients.json could not be written (kept in memory all the same).
  Status ClientRunning(uint64_t session, const ClientProcess& process) COHORT_EXCLUDES(clients_mu_);
  void ClientFinished(uint64_t session) COHORT_EXCLUDES(clients_mu_);
  // Appends `finish_body` as the finish of every session recorded running whose process has
  // ended and that no connection has attached, and syncs; returns how many were finished.
  Result<int> FinishEndedClients(std::string_view finish_body) COHORT_EXCLUDES(clients_mu_);
  // Whether the process of a client away still runs. Those whose process ended are forgotten
  // (clients.json is left for Remove; a later reader finds them ended too); their pids are
  // added to *ended when given.
  bool AwaitsLiveClient(std::vector<int>* ended = nullptr) COHORT_EXCLUDES(clients_mu_);

  // ---- uploading (one Sender thread) ----
  // The next durable record not yet uploaded: true and *record set (valid until Pop), false
  // when there is none now. Undecodable records are skipped (and logged).
  Result<bool> Peek(const Record** record);
  // Marks the peeked record done (acknowledged by the server or skipped for good).
  void Pop();
  // The server acknowledged the join record `join_seq`; the writer's `server_last_seq` came with
  // it. Raises the upload offset so that the records after the join upload above it, persists
  // the decision (after flushing the acks of the records before the join), and keeps the offset
  // decided earlier for the same join (a re-send after a crash).
  Status NoteJoined(uint64_t join_seq, uint64_t server_last_seq) COHORT_EXCLUDES(append_mu_);
  // The seq a record is uploaded with. Without append_mu_ (which Append and Sync hold over their
  // I/O): only NoteJoined, on this same Sender thread, changes upload_offset_ after opening.
  uint64_t UploadSeq(uint64_t seq) const COHORT_NO_THREAD_SAFETY_ANALYSIS {
    return seq + upload_offset_;
  }
  // This stream's id, sent with each batch (Cohort-Batch-Ordered: the server keeps the highest
  // seq it stored per writer and stream). Random, made with the directory (meta.json, so copies
  // of a directory share it); a damaged seq.json loses the upload offset, and then a new id is
  // made and kept in seq.json, which wins over meta.json: the server never takes a record
  // numbered anew for one it holds.
  const std::string& stream_id() const { return stream_id_; }
  // Writes seq.json when the stream id is not on disk yet (after a damaged seq.json, or a
  // directory of an older agent): the Sender calls it before it uploads a batch, so that a batch
  // the server stored under this id is never re-sent under another after a restart.
  Status SaveStreamId() COHORT_EXCLUDES(append_mu_);
  // Writes the acknowledged position to the WAL (at most every `min_interval_ms` unless
  // `force`), letting it delete uploaded segments.
  Status FlushAcks(bool force, int64_t min_interval_ms = 250) COHORT_EXCLUDES(append_mu_);
  // The server refused the peeked record for good (`why`): counts it in progress().refused and
  // keeps the count and `why` in seq.json before the record's acknowledgement can remove it, so
  // that every later opening (a second `cohort sync` of a kept directory) still reports it.
  Status NoteRefused(const Status& why) COHORT_EXCLUDES(append_mu_, mu_);

  // ---- progress ----
  UploadProgress progress() const COHORT_EXCLUDES(mu_);
  // Then wakes waiters.
  void Update(const std::function<void(UploadProgress*)>& change) COHORT_EXCLUDES(mu_);
  // Waits until `done(progress)` or `deadline_ms` (NowMillis clock); returns the last progress.
  // `done` runs under the stream's lock: it must take no lock that is held while calling into
  // this stream (the Sender's, for one: Sender::Loop reads progress() under it).
  UploadProgress WaitFor(const std::function<bool(const UploadProgress&)>& done,
                         int64_t deadline_ms) const COHORT_EXCLUDES(mu_);

  // Clients attached (connections) by session; heartbeats are sent while attached() > 0.
  void Attach(uint64_t session) COHORT_EXCLUDES(clients_mu_, mu_);
  void Detach(uint64_t session) COHORT_EXCLUDES(clients_mu_, mu_);
  int attached() const COHORT_EXCLUDES(mu_);

  // Closes the WAL (syncing it). Appends fail afterwards.
  Status Close() COHORT_EXCLUDES(append_mu_);
  // Writes the FINISHED marker (synced, with its directory), then closes the stream and deletes
  // the directory (and the run directory above it when left empty). When the marker cannot be
  // written nothing is deleted and the error is returned: every record was acknowledged, so
  // keeping the directory loses nothing, and the caller tries again later.
  Status Remove();

 private:
  WriterStream(std::string dir, WriterTarget target, wal::FileSystem* fs);
  Status OpenLog();
  Status ScanUnacknowledged() COHORT_EXCLUDES(append_mu_, mu_);
  Status LoadSeqState() COHORT_EXCLUDES(append_mu_);
  Status WriteSeqStateLocked() COHORT_REQUIRES(append_mu_);
  Status PersistSeqStateIfDirty() COHORT_EXCLUDES(append_mu_);
  Result<uint64_t> AppendLocked(RecordKind kind, uint64_t session, uint64_t frame,
                                std::string_view body) COHORT_REQUIRES(append_mu_);
  Status LoadClients() COHORT_EXCLUDES(clients_mu_);
  void LoadClientsOrWarn() COHORT_EXCLUDES(clients_mu_);
  Status WriteClientsLocked() COHORT_REQUIRES(clients_mu_);
  // FlushAcks for Close, which holds append_mu_.
  Status FlushAcksLocked(bool force, int64_t min_interval_ms) COHORT_REQUIRES(append_mu_);
  // The parts of FlushAcks: whether an acknowledgement is due at `now_ms`; seq.json brought up
  // to date for it; the acknowledgement written to the WAL.
  bool AcksDue(bool force, int64_t min_interval_ms, int64_t now_ms) const;
  Status SaveSeqStateForAcksLocked() COHORT_REQUIRES(append_mu_);
  Status WriteAcks(int64_t now_ms);
  // The next decodable record from reader_ into *out (false: none now); undecodable ones are
  // logged and skipped, *skipped set past them.
  Result<bool> ReadRecord(std::optional<Record>* out, wal::Position* next, wal::Position* skipped);

  const std::string dir_;
  WriterTarget target_;
  wal::FileSystem* const fs_;
  bool already_finished_ = false;

  // Set by OpenLog; Close resets it under append_mu_, after the Sender let go of the stream.
  std::unique_ptr<wal::Log> log_;

  std::atomic<bool> broken_{false};  // Sync failed and broke the WAL
  mutable Mutex append_mu_;  // serialises Append/Sync
  uint64_t next_seq_ COHORT_GUARDED_BY(append_mu_) = 1;
  // Persisted: every seq that left the WAL is below it.
  uint64_t seq_floor_ COHORT_GUARDED_BY(append_mu_) = 0;
  // Persisted: the join whose NoteJoined set upload_offset_.
  uint64_t joined_seq_ COHORT_GUARDED_BY(append_mu_) = 0;
  // Persisted; the Sender reads it without the lock (UploadSeq).
  uint64_t upload_offset_ COHORT_GUARDED_BY(append_mu_) = 0;
  // Persisted: records refused for good since the directory was made, and the last refusal.
  int64_t refused_ COHORT_GUARDED_BY(append_mu_) = 0;
  Status last_refusal_ COHORT_GUARDED_BY(append_mu_);
  // joined_seq_ changed since seq.json was written.
  bool seq_state_dirty_ COHORT_GUARDED_BY(append_mu_) = false;
  // Persisted in seq.json or meta.json; set while opening, read-only after.
  std::string stream_id_;
  // stream_id_ is on disk (seq.json, or meta.json when seq.json names none). Atomic: the Sender
  // looks before each batch without append_mu_ (which Append holds over its I/O); set under it.
  std::atomic<bool> stream_id_saved_{false};
  // Session -> highest frame stored.
  std::map<uint64_t, uint64_t> last_frame_ COHORT_GUARDED_BY(append_mu_);
  // Persisted: seq.json's "sessions".
  std::map<uint64_t, uint64_t> saved_frames_ COHORT_GUARDED_BY(append_mu_);
  // The acknowledged position saved_frames_ was written for.
  wal::Position frames_saved_at_ COHORT_GUARDED_BY(append_mu_);

  // Upload side (Sender thread only).
  std::unique_ptr<wal::Reader> reader_;
  std::optional<Record> peeked_;
  wal::Position peeked_next_;
  std::map<uint64_t, uint64_t> uploaded_frames_;  // session -> highest frame done (or saved)
  bool uploaded_frames_dirty_ = false;            // not all in saved_frames_
  wal::Position ack_pending_;
  wal::Position ack_written_;
  int64_t ack_written_ms_ = 0;

  // Also guards clients.json. ClientGone appends under it.
  mutable Mutex clients_mu_ COHORT_ACQUIRED_BEFORE(append_mu_, mu_);
  // Session -> connections attached.
  std::map<uint64_t, int> attached_sessions_ COHORT_GUARDED_BY(clients_mu_);
  // Persisted: clients.json. Clients away (gone without finish, their process running) and
  // clients running (attached, their session not finished).
  std::map<uint64_t, ClientProcess> away_ COHORT_GUARDED_BY(clients_mu_);
  std::map<uint64_t, ClientProcess> running_ COHORT_GUARDED_BY(clients_mu_);
  // Sessions whose last join in the WAL (when it was opened) is followed by a finish.
  std::set<uint64_t> finished_sessions_ COHORT_GUARDED_BY(clients_mu_);

  // Taken last (Append updates progress_ under append_mu_).
  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(append_mu_);
  mutable CondVar cv_;  // progress_ changed
  UploadProgress progress_ COHORT_GUARDED_BY(mu_);
  int attached_ COHORT_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::agent
