// ArtifactUploader: the node agent's background upload of artifact versions (docs/artifacts.md
// "Who does what", docs/formats.md "Artifact intents").
//
// The Sender hands it each artifact intent it meets in a writer's WAL (RecordKind::kArtifact),
// after the run's earlier records (so the run exists on the server). Accept() records the intent
// durably in <root>/intents/<id>.json (with the server, key and entity to use; mode 0600) under
// an exclusive lock <id>.lock, then the upload runs in the background, per intent:
//   for each blob: GET /api/v1/blobs/{entity}/{sha256}?size=N (stored? which parts?), PUT the
//   missing parts (kBlobPartBytes each, read from the source file through the wal::FileSystem,
//   at most `parallel_parts` in flight for the whole agent), POST .../complete;
//   then POST /api/v1/artifacts/{entity}/{project}/{name} with the commit body.
// Network errors, 408, 429 and 5xx retry the intent after a backoff (the server's part list says
// what is left, so nothing stored is sent again); 401/403 retry after a long pause; any other
// 4xx fails the intent with the server's message. After the commit (or a failure) the staged
// copies are moved to <root>/trash (a rename: deleting a 2 GiB file takes seconds, which the next
// intent must not wait for) and deleted there by a thread of their own, and the outcome is
// written to the intent file, kept `keep_done_s` so that clients can ask for it (StatusOf) and a
// re-handed intent is not uploaded twice.
//
// After a kill -9 a new agent's Recover() (and every Tick) takes over the pending intents whose
// lock no live process holds.
//
// Threading: all public methods are thread-safe. One thread walks the intents; a pool of
// `parallel_parts` threads PUTs parts; one thread empties the trash. Lock order: mu_ only (no
// other lock is held while taking it, and none is taken under it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/artifact_intent.h"
#include "agent/backoff.h"
#include "agent/http_client.h"
#include "agent/part_pool.h"
#include "core/mutex.h"
#include "wal/file.h"

namespace cohort::agent {

// Where and as whom an intent is uploaded (the run and writer are in the intent).
struct ArtifactTarget {
  std::string base_url;
  std::string api_key;
  std::string entity;  // resolved (never empty)
  std::string project;
};

struct ArtifactUploaderOptions {
  HttpClientOptions http;
  Backoff::Options backoff;
  // Parts in flight for the whole agent; $COHORT_ARTIFACT_PARTS. The server's local blob store
  // writes each part as it arrives (S3 gathers each part, 8 MiB), so more cost it little memory;
  // each costs the agent its 8 MiB part read from disk. Four were no faster than two on the SDK's
  // path (docs/benchmarks.md "Artifacts").
  int parallel_parts = kDefaultParallelParts;
  double auth_pause_s = 300;   // after 401/403
  double keep_done_s = 86400;  // how long a committed or failed intent's file is kept
  // A pause before each part (a slow link, for tests); $COHORT_ARTIFACT_PART_DELAY_MS.
  int64_t part_delay_ms = 0;
};

class ArtifactUploader {
 public:
  static constexpr char kDirName[] = "%artifacts";  // under the data dir; no run dir is named so
  static constexpr char kIntentsDir[] = "intents";
  static constexpr char kStagingDir[] = "staging";
  static constexpr char kTrashDir[] = "trash";  // staged copies of finished intents, being deleted

  // `root` is <data dir>/%artifacts. The file system is the agent's (tests inject faults).
  ArtifactUploader(std::string root, wal::FileSystem* fs, ArtifactUploaderOptions options = {});
  ~ArtifactUploader();  // Stop()
  ArtifactUploader(const ArtifactUploader&) = delete;
  ArtifactUploader& operator=(const ArtifactUploader&) = delete;

  void Start() COHORT_EXCLUDES(mu_);
  // Aborts requests in flight and ends the threads; pending intents stay on disk.
  void Stop() COHORT_EXCLUDES(mu_);

  const std::string& root() const { return root_; }
  // Creates root, intents/, staging/ and trash/ (mode 0700). Accept does it too; the agent calls it
  // at start so that clients can stage files.
  Status PrepareDirs();
  // Where clients stage copies: <root>/staging (one directory per intent id).
  std::string staging_dir() const;

  // Records `intent_json` durably for upload to `target`. Idempotent by the intent's id (an
  // intent handed again after a restart is not uploaded twice). kInvalidArgument for an intent
  // that does not parse (never retried); other errors are the disk's (retry later).
  Status Accept(const ArtifactTarget& target, std::string_view intent_json) COHORT_EXCLUDES(mu_);
  // Takes over the pending intents under root that no live process holds; loads the outcome of
  // finished ones. Returns how many pending intents were taken.
  int Recover() COHORT_EXCLUDES(mu_);
  // Housekeeping (call every second or so): Recover(), and forgets finished intents older than
  // keep_done_s (their files too).
  void Tick() COHORT_EXCLUDES(mu_);

  // The intent that names `dir` (a staging directory of a client) is durable in a WAL: removes
  // the client's owner file, so the directory is never taken for an orphan. Only directories
  // under staging_dir() are touched.
  void ReleaseStaging(const std::string& dir) COHORT_EXCLUDES(staging_mu_);
  // Deletes the staging directories whose client has ended before it handed its intent over
  // (agent/staging_claim.h), then the lock files of ended clients older than
  // kClientLockFileMinAgeMs. Tick does it every minute. Returns how many directories.
  int RemoveOrphanedStaging() COHORT_EXCLUDES(mu_, staging_mu_);
  static constexpr int64_t kClientLockFileMinAgeMs = 3600 * 1000;

  // One status per id, in order ("unknown" for an id this agent has not seen).
  std::vector<ArtifactStatus> StatusOf(const std::vector<std::string>& ids) COHORT_EXCLUDES(mu_);
  // Intents accepted or recovered and not yet committed or failed.
  int pending() const COHORT_EXCLUDES(mu_);
  // The intents this uploader failed for good (refused by the server, unreadable copies), as
  // "<name> (<id>): <why>", oldest first (the latest kMaxFailuresKept): `cohort sync` reports
  // them (their copies are gone).
  std::vector<std::string> failures() const COHORT_EXCLUDES(mu_);
  // Parts PUT since the start (tests: a re-logged artifact uploads none).
  int64_t parts_uploaded() const { return parts_uploaded_.load(); }

 private:
  struct Entry {
    ArtifactIntent intent;
    std::string intent_json;  // the client's text, as stored
    ArtifactTarget target;
    ArtifactStatus status;
    std::unique_ptr<wal::FileLock> lock;
    int64_t done_ms = 0;      // wall clock of the outcome; 0: pending
    int64_t retry_at_ms = 0;  // monotonic: not before
  };
  void Loop() COHORT_EXCLUDES(mu_);
  // The trash thread: deletes what is in <root>/trash whenever something was moved there.
  void EmptyTrashLoop() COHORT_EXCLUDES(mu_);
  // Moves a finished intent's staging directory to the trash (deletes it in place when it
  // cannot be moved).
  void DiscardStaging(const std::string& id, const std::string& staging) COHORT_EXCLUDES(mu_);
  // One attempt at an intent: OK when committed; the status says whether to retry.
  Status Attempt(const std::string& id, Entry* snapshot) COHORT_EXCLUDES(mu_);
  Status UploadBlob(const std::string& id, const Entry& e, const ArtifactFileEntry& f)
      COHORT_EXCLUDES(mu_);
  Status Commit(const std::string& id, const Entry& e) COHORT_EXCLUDES(mu_);
  // The intent's status as committed: every byte and file done, nothing current or failing
  // (media blobs and artifact versions alike; a version adds what the server answered).
  ArtifactStatus Committed(const std::string& id) COHORT_EXCLUDES(mu_);
  Result<HttpResponse> Call(const std::string& base_url, std::string_view method,
                            const std::string& path, std::string_view body,
                            const std::string& api_key);
  void Progress(const std::string& id, const std::function<void(ArtifactStatus*)>& change)
      COHORT_EXCLUDES(mu_);
  // Writes the outcome into the intent file and deletes the staged copies.
  void Finish(const std::string& id, ArtifactStatus outcome) COHORT_EXCLUDES(mu_);
  // A directory right under staging_dir() (never anything else is deleted).
  bool InStaging(const std::string& dir) const;
  std::string IntentPath(const std::string& id) const;
  std::string LockPath(const std::string& id) const;
  static std::string FileJson(const ArtifactTarget& target, std::string_view intent_json,
                              const ArtifactStatus& status);
  // Loads <id>.json (pending ones only with `lock`); false when it is not there or held.
  bool LoadLocked(const std::string& id, bool take_pending) COHORT_REQUIRES(mu_);
  // The status saved in <id>.json, without taking the intent.
  std::optional<ArtifactStatus> FileStatus(const std::string& id) const;

  const std::string root_;
  wal::FileSystem* const fs_;
  const ArtifactUploaderOptions options_;
  std::atomic<int64_t> parts_uploaded_{0};

  // The walking thread's own; other threads only Abort() them (clients_mu_).
  Backoff backoff_;
  Mutex clients_mu_;
  std::map<std::string, std::unique_ptr<HttpClient>> clients_ COHORT_GUARDED_BY(clients_mu_);
  std::unique_ptr<PartPool> pool_;

  void RemoveEndedClientsLockFiles();

  // Held while a staging directory is judged (RemoveOrphanedStaging) or released.
  Mutex staging_mu_ COHORT_ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(clients_mu_);
  CondVar cv_;
  std::map<std::string, Entry> entries_ COHORT_GUARDED_BY(mu_);
  std::deque<std::string> queue_ COHORT_GUARDED_BY(mu_);  // pending ids, in order
  std::vector<std::string> failures_ COHORT_GUARDED_BY(mu_);  // failures(), of this uploader
  static constexpr size_t kMaxFailuresKept = 1000;            // the latest ones
  bool stop_ COHORT_GUARDED_BY(mu_) = false;
  bool started_ COHORT_GUARDED_BY(mu_) = false;
  bool trash_waiting_ COHORT_GUARDED_BY(mu_) = true;  // something to delete (at start: leftovers)
  std::thread thread_;
  std::thread trash_thread_;
  int64_t orphans_checked_ms_ = 0;  // Tick's thread only
};

}  // namespace cohort::agent
