// Sender: uploads the records of writer streams to one Cohort server, in order per stream, over
// one keep-alive HTTP connection (so the ranks of a node cost the server one client).
//
// Per record (record.h): run upsert, writer join, batch (seq = the record's seq, so retries and
// restarts never duplicate), run patch, writer finish, alert. Outcomes:
//   2xx                      done; the WAL may drop it
//   network error, 408, 5xx  retry after an exponential backoff with jitter (Retry-After wins)
//   429                      retry after Retry-After (or the backoff when absent)
//   415 to a batch           a server that does not read batch v4: retry after the longest
//                            backoff, with a warning (the records are kept)
//   artifact intent          handed to the ArtifactUploader (durable in its own directory),
//                            which uploads it in the background; the stream goes on at once
//   401, 403                 the stream pauses (its key is wrong; keeping the data beats
//                            dropping it) and retries later; with stop_on_auth_error its
//                            uploads stop instead, its records kept (cohort sync)
//   other non-2xx, non-4xx   (a proxy's redirect, 1xx) retried with backoff, as 5xx
//   other 4xx                a permanent error of that record: logged, skipped; a refused run
//                            upsert or writer join rejects the whole stream (dropped; kept with
//                            keep_rejected: cohort sync); an alert answered
//                            429 (the project's alert rate limit) is skipped too
// It also sends heartbeats for streams that have clients attached and that it has not talked to
// for heartbeat_interval_s.
//
// Batch records go out as they are in the WAL: the record's body is the batch v4 the client
// encoded (core/batch_format.h), posted with Content-Type application/vnd.cohort.batch and the
// upload seq in the Cohort-Batch-Seq header; nothing is decoded or encoded again. A server that
// does not read batch v4 answers 415: a warning says so, the records stay in the WAL, and the
// Sender tries again after its longest backoff (until the server is upgraded).
//
// Threading: all public methods are thread-safe. One background thread does the uploads;
// Remove() waits until that thread no longer touches the stream, so the caller may then close it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/backoff.h"
#include "agent/http_client.h"
#include "agent/writer_stream.h"
#include "core/mutex.h"

namespace cohort::agent {

class ArtifactUploader;

struct SenderOptions {
  // Where artifact intents (RecordKind::kArtifact) are handed; null: they wait in the WAL (the
  // Sender retries them after its longest backoff) and nothing is dropped.
  ArtifactUploader* artifacts = nullptr;
  HttpClientOptions http;
  Backoff::Options backoff;
  double heartbeat_interval_s = 30;
  double auth_pause_s = 300;        // pause of a stream after 401/403
  bool stop_on_auth_error = false;  // on 401/403 stop the stream's uploads (records kept)
  // A writer whose run or join the server refuses (`rejected`): with keep_rejected (cohort sync)
  // its records stay in the WAL and its uploads stop in this process, so that the directory is
  // kept and every sync says so; without (the agent, whose client's init was told) they are
  // dropped.
  bool keep_rejected = false;
  int records_per_turn = 16;        // records of one stream before moving to the next
};

struct SenderStats {
  int64_t requests = 0;
  int64_t records_done = 0;
  int64_t records_skipped = 0;
  int64_t points = 0;
  int64_t retries = 0;
  double backoff_s = 0;          // current wait before the next attempt (0: none)
};

class Sender {
 public:
  explicit Sender(std::string base_url, SenderOptions options = {});
  ~Sender();  // Stop()
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  void Start() COHORT_EXCLUDES(mu_);
  // Aborts a request in flight, ends the thread and writes the acknowledged positions.
  void Stop() COHORT_EXCLUDES(mu_);

  void Add(std::shared_ptr<WriterStream> stream) COHORT_EXCLUDES(mu_);
  // Forgets `stream`, waiting for the upload thread to let go of it first.
  void Remove(const WriterStream* stream) COHORT_EXCLUDES(mu_);
  // New durable records are available (call after WriterStream::Sync).
  void Wake() COHORT_EXCLUDES(mu_);

  // True while the server is failing and the Sender waits before its next attempt. Takes no
  // lock: WriterStream::WaitFor predicates call it under the stream's lock, and the upload
  // thread reads streams under the Sender's lock.
  bool BackingOff() const;
  size_t stream_count() const COHORT_EXCLUDES(mu_);
  SenderStats stats() const COHORT_EXCLUDES(mu_);
  const std::string& base_url() const { return base_url_; }

 private:
  struct Entry {
    std::shared_ptr<WriterStream> stream;
    uint64_t idle_generation = 0;  // found nothing at this wake generation
    int64_t paused_until_ms = 0;
    int64_t last_contact_ms = 0;
    bool had_contact = false;
    bool key_refused = false;  // mirrors the stream's UploadProgress::key_refused
    uint64_t heartbeat_epoch = 0;  // the failure_epoch_ of its last heartbeat
  };
  // kStop: this writer's uploads stop in this process, nothing dropped (`cohort sync` given a
  // key the server refuses: the WAL stays for a sync with a key it accepts).
  enum class Outcome { kDone, kSkip, kReject, kRetry, kPause, kStop };
  struct Attempt {
    Outcome outcome = Outcome::kDone;
    double delay_s = 0;
    Status status;
    int64_t points = 0;  // a batch's points, as the server counted them
    bool rate_limited = false;  // kSkip of an alert over the project's alert rate: not refused
  };

  void Loop() COHORT_EXCLUDES(mu_);
  // Uploads up to records_per_turn records of `e` (the thread's busy_ entry).
  void Turn(Entry* e) COHORT_EXCLUDES(mu_);
  Attempt Upload(Entry* e, const Record& record);
  Attempt Classify(const Result<HttpResponse>& response, std::string_view what);
  void Heartbeat(Entry* e);
  // Hands an artifact intent record to options_.artifacts.
  Attempt HandArtifact(const WriterTarget& t, const std::string& entity, const Record& rec);
  Result<std::string> EntityFor(WriterStream* stream);
  Result<HttpResponse> Call(std::string_view method, const std::string& path, std::string_view body,
                            const std::string& api_key,
                            std::string_view content_type = "application/json",
                            std::string_view extra_header = {});

  const std::string base_url_;
  const SenderOptions options_;
  HttpClient http_;                               // used only by the thread
  Backoff backoff_;                               // used only by the thread
  // Counts the uploads that failed and were retried (or paused); thread only. A live writer
  // (a client attached) heartbeats as soon as an upload of it succeeds after such a failure:
  // while uploads failed, no heartbeat reached the server, which may have marked it crashed,
  // and a batch alone does not bring it back (store.h WriterStore::Heartbeat).
  uint64_t failure_epoch_ = 0;
  std::map<std::string, std::string> entities_;   // api key -> entity; thread only

  // Taken before a stream's locks (Loop reads progress() under it, Stop flushes acks).
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<std::unique_ptr<Entry>> entries_ COHORT_GUARDED_BY(mu_);
  size_t next_ COHORT_GUARDED_BY(mu_) = 0;  // round-robin cursor
  // The entry the thread works on, without mu_: its fields are the thread's until it is reset.
  Entry* busy_ COHORT_GUARDED_BY(mu_) = nullptr;
  uint64_t wake_generation_ COHORT_GUARDED_BY(mu_) = 1;
  // Server-wide backoff (monotonic clock, like all its timers); written under mu_, read anywhere.
  std::atomic<int64_t> retry_at_ms_{0};
  bool stop_ COHORT_GUARDED_BY(mu_) = false;
  bool started_ COHORT_GUARDED_BY(mu_) = false;
  SenderStats stats_ COHORT_GUARDED_BY(mu_);
  std::thread thread_;  // started by Start() under mu_, joined by Stop()
};

}  // namespace cohort::agent
