// Ingest: what the node agent does with the writers its clients open, independent of how they
// reach it: the shared agent's socket server and a private agent's one connection both drive it.
//
// For each writer (run id + label) it keeps a WriterStream in <data dir>/<run>/<label>/, hands
// it to the Sender of its server (one per base URL), runs a system-monitor Sampler for it, and
// turns client calls into WAL records: open -> run upsert + writer join, log -> batch, update ->
// run patch, finish -> writer finish, a connection lost without finish -> finish "crashed".
// A writer whose client went away without finishing while its process runs on is kept (its
// directory, and with it what each session stored) until the client is back or its process has
// ended: the client re-opens its session and resends only the frames not stored.
//
// Threading: Ingest and WriterSession are thread-safe. A WriterSession is used by one client
// connection at a time (its calls are serialised by the caller) and must be destroyed before
// the Ingest.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/artifact_uploader.h"
#include "agent/client_process.h"
#include "agent/protocol.h"
#include "agent/sender.h"
#include "agent/writer_stream.h"
#include "core/mutex.h"

namespace cohort::monitor {
class Sampler;
class RootPids;
}  // namespace cohort::monitor

namespace cohort::agent {

struct IngestOptions {
  std::string data_dir;  // default WAL root when a client names none
  // The file system of the writer directories (meta.json, seq.json, FINISHED, the WALs); null:
  // the machine's. Tests inject faults below it (wal/fault_file_system.h).
  wal::FileSystem* fs = nullptr;
  SenderOptions sender;
  bool system_monitor = true;  // false: ignore stats_interval_s (tests)
  double orphan_close_s = 60;  // close an unfinished, uploaded stream nobody uses after this
  double remove_retry_s = 60;  // a finished writer whose directory could not be removed: retry
  ArtifactUploaderOptions artifacts;  // the uploader lives in <data_dir>/%artifacts
};

class Ingest;

// One client's writer, open for appending.
class WriterSession {
 public:
  ~WriterSession();  // without Finish: Crash()
  WriterSession(const WriterSession&) = delete;
  WriterSession& operator=(const WriterSession&) = delete;

  // Appends a log frame's batch v4 as a batch record, byte for byte, after checking its header
  // and checksum; durable after Sync().
  Status Log(uint64_t frame, std::string_view batch);
  // Appends a run patch: `json` must be {"config": {...}} and/or {"summary": {...}}.
  Status Update(uint64_t frame, std::string_view json);
  // Appends an artifact intent (checked: artifact_intent.h) as it is; the Sender hands it to the
  // agent's ArtifactUploader in its turn, after the run's earlier records.
  Status Artifact(uint64_t frame, std::string_view json);
  // Appends an alert raised by code (checked: alert_body.h) as it is; the Sender posts it to the
  // writer's alerts route in its turn.
  Status Alert(uint64_t frame, std::string_view json);
  // Makes everything appended durable and lets the Sender see it (group commit). With
  // wake_sender false the caller calls WakeSender() itself, e.g. after it acknowledged the
  // client: then the server can never hold data whose ack the client has not been sent.
  Status Sync(bool wake_sender = true);
  void WakeSender();
  // Stops the monitor, appends the writer's finish record, syncs, then waits up to
  // request.wait_ms for the upload (less when the server is failing).
  Result<FinishReply> Finish(uint64_t frame, const FinishRequest& request);
  // The client vanished without finishing: records finish state "crashed" at once (unless it
  // is back already on another connection), and keeps the writer for its return while its
  // process (set_client) runs.
  void Crash();
  // The agent is going away while the client lives: stop without recording anything (the
  // client reconnects to the next agent and carries on).
  void Release();

  // The process of the client (an agent connection's peer); none when unknown.
  // Recorded in the writer's clients.json while the session runs (WriterStream::ClientRunning).
  void set_client(std::optional<ClientProcess> process);
  bool finished() const { return finished_; }
  const std::string& dir() const;
  WriterStream* stream() const { return stream_.get(); }

 private:
  friend class Ingest;
  WriterSession(Ingest* ingest, std::shared_ptr<WriterStream> stream, Sender* sender,
                uint64_t session);
  void StopMonitor();
  void OnSamples(int64_t time_ms, const std::vector<std::pair<std::string, double>>& samples);

  Ingest* const ingest_;
  const std::shared_ptr<WriterStream> stream_;
  Sender* const sender_;  // null: offline
  const uint64_t session_;
  std::shared_ptr<monitor::RootPids> pids_;
  std::unique_ptr<monitor::Sampler> sampler_;
  std::optional<ClientProcess> client_;
  bool finished_ = false;
  // Staging directories of intents appended since the last Sync: their owner files go once the
  // intents are durable.
  std::vector<std::string> staged_;
};

class Ingest {
 public:
  explicit Ingest(IngestOptions options);
  ~Ingest();  // stops the senders (records not uploaded stay in the WALs) and closes streams
  Ingest(const Ingest&) = delete;
  Ingest& operator=(const Ingest&) = delete;

  // Opens (or re-attaches to) a writer and fills `reply`. Waits up to request.wait_ms for the
  // server to confirm the writer. An error reply (reply->ok false) comes with a null session.
  std::unique_ptr<WriterSession> Open(const OpenRequest& request, OpenReply* reply)
      COHORT_EXCLUDES(mu_);

  // Resumes the upload of every writer directory under `data_dir` that no process holds.
  // Returns how many were resumed.
  int RecoverDir(const std::string& data_dir) COHORT_EXCLUDES(mu_);

  // Housekeeping, call every second or so: removes complete streams, closes idle ones.
  void Tick() COHORT_EXCLUDES(mu_);
  // No client attached and nothing left that could be uploaded now.
  bool Idle() const COHORT_EXCLUDES(mu_);
  size_t stream_count() const COHORT_EXCLUDES(mu_);
  // Sum over the Senders.
  SenderStats stats() const COHORT_EXCLUDES(mu_);
  // The agent's artifact uploader (null without a data_dir).
  ArtifactUploader* artifacts() const { return artifacts_.get(); }

  // <data_dir>/<run>/<label> with both components made safe for a path.
  static std::string WriterDir(const std::string& data_dir, const std::string& run_id,
                               const std::string& label);

 private:
  friend class WriterSession;
  struct StreamSlot {
    std::shared_ptr<WriterStream> stream;
    Sender* sender = nullptr;   // null when offline
    int64_t idle_since_ms = 0;  // when it was last seen without clients and uploaded
    bool kept = false;          // finished and uploaded, kept for a client away (logged)
    int64_t remove_after_ms = 0;  // a failed removal is tried again from this time on
  };

  Sender* SenderFor(const std::string& base_url) COHORT_REQUIRES(mu_);
  // Records the crash of the writers no connection is attached to whose client's process ended
  // without its session finishing (an agent killed with its client: the next one finds them in
  // clients.json), so that they end on the server and their directories go once uploaded.
  void FinishUnattendedWriters() COHORT_EXCLUDES(mu_);
  void SessionEnded(WriterStream* stream) COHORT_EXCLUDES(mu_);

  const IngestOptions options_;
  wal::FileSystem* const fs_;
  // Stopped after the Senders (which hand it intents).
  std::unique_ptr<ArtifactUploader> artifacts_;
  // Taken before the Senders' and the streams' locks.
  mutable Mutex mu_;
  // By base URL.
  std::map<std::string, std::unique_ptr<Sender>> senders_ COHORT_GUARDED_BY(mu_);
  // By directory.
  std::map<std::string, StreamSlot> streams_ COHORT_GUARDED_BY(mu_);
  // Directories whose writer an Open is moving to another server or mode (its old stream out
  // of streams_, the new one not in yet), or that Tick is removing or closing; opens of them
  // wait on moved_.
  std::set<std::string> moving_ COHORT_GUARDED_BY(mu_);
  CondVar moved_;
};

// `dir` without "." / ".." components or trailing slashes, so equal directories compare equal.
std::string NormalizeDir(const std::string& dir);

// A path component for `s`: [A-Za-z0-9_.-] kept, other bytes percent-encoded, and "." / ".."
// encoded, so no label or run id can leave its directory.
std::string PathComponent(std::string_view s);

}  // namespace cohort::agent
