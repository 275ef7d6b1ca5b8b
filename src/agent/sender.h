// Sender: uploads the records of writer streams to one Cohort server, in order per stream, over
// one keep-alive HTTP connection (so the ranks of a node cost the server one client).
//
// Per record (record.h): run upsert, writer join, batch (seq = the record's seq, so retries and
// restarts never duplicate), run patch, writer finish. Outcomes:
//   2xx                      done; the WAL may drop it
//   network error, 408, 5xx  retry after an exponential backoff with jitter (Retry-After wins)
//   429                      retry after Retry-After (or the backoff when absent)
//   401, 403                 the stream pauses (its key is wrong; keeping the data beats
//                            dropping it) and retries later; with stop_on_auth_error the
//                            stream fails instead (cohort sync)
//   other 4xx                a permanent error of that record: logged, skipped; a refused run
//                            upsert or writer join rejects the whole stream
// It also sends heartbeats for streams that have clients attached and that it has not talked to
// for heartbeat_interval_s.
//
// Batch bodies: binary (batch_binary.h) when the server lists "cohort-batch-v1" in GET /healthz's
// "ingest_formats" (asked once, before the first batch), else JSON (batch_json.h). A 415 answer
// to a binary batch switches this Sender to JSON for good; a 400 answer to one is retried at
// once as JSON (a record is never skipped for its encoding alone). COHORT_INGEST_FORMAT=json
// forces JSON.
//
// Encode-ahead: while a binary batch is in flight, a second thread (the prep worker) reads the
// stream's next record from the WAL (WriterStream::PeekNext) and encodes it, so the agent's
// share of a batch overlaps the server's instead of alternating with it. Only one request is in
// flight at a time and records still go out strictly in order, one after the other's answer
// (the server assigns implicit steps and checks console stream positions in arrival order); a
// prepared body is used only for the record, upload seq and stream it was made for.
//
// Threading: all public methods are thread-safe. One background thread does the uploads;
// Remove() waits until that thread no longer touches the stream, so the caller may then close it.
// The prep worker touches a stream only between the upload thread's StartPrepare and
// FinishPrepare (inside a Turn, while the upload thread waits for an answer and holds no lock).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/backoff.h"
#include "agent/batch_json.h"
#include "agent/http_client.h"
#include "agent/writer_stream.h"

namespace cohort::agent {

struct SenderOptions {
  HttpClientOptions http;
  Backoff::Options backoff;
  double heartbeat_interval_s = 30;
  double auth_pause_s = 300;        // pause of a stream after 401/403
  bool stop_on_auth_error = false;  // reject the stream on 401/403 instead of pausing
  int records_per_turn = 16;        // records of one stream before moving to the next
};

struct SenderStats {
  int64_t requests = 0;
  int64_t records_done = 0;
  int64_t records_skipped = 0;
  int64_t points = 0;
  int64_t retries = 0;
  int64_t binary_batches = 0;    // batches acknowledged in the binary encoding
  int64_t prepared_batches = 0;  // of those, sent with a body encoded ahead (encode-ahead)
  double backoff_s = 0;          // current wait before the next attempt (0: none)
};

class Sender {
 public:
  explicit Sender(std::string base_url, SenderOptions options = {});
  ~Sender();  // Stop()
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  void Start();
  // Aborts a request in flight, ends the thread and writes the acknowledged positions.
  void Stop();

  void Add(std::shared_ptr<WriterStream> stream);
  // Forgets `stream`, waiting for the upload thread to let go of it first.
  void Remove(const WriterStream* stream);
  // New durable records are available (call after WriterStream::Sync).
  void Wake();

  // True while the server is failing and the Sender waits before its next attempt. Takes no
  // lock: WriterStream::WaitFor predicates call it under the stream's lock, and the upload
  // thread reads streams under the Sender's lock.
  bool BackingOff() const;
  size_t stream_count() const;
  SenderStats stats() const;
  const std::string& base_url() const { return base_url_; }

 private:
  struct Entry {
    std::shared_ptr<WriterStream> stream;
    uint64_t idle_generation = 0;  // found nothing at this wake generation
    int64_t paused_until_ms = 0;
    int64_t last_contact_ms = 0;
    bool had_contact = false;
  };
  enum class Outcome { kDone, kSkip, kReject, kRetry, kPause };
  struct Attempt {
    Outcome outcome = Outcome::kDone;
    double delay_s = 0;
    Status status;
    int64_t points = 0;
    bool binary = false;    // a batch sent in the binary encoding
    bool prepared = false;  // ... with a body encoded ahead
  };

  void Loop();
  // Uploads up to records_per_turn records of `e`. Runs on the thread without mu_.
  void Turn(Entry* e);
  Attempt Upload(Entry* e, const Record& record);
  Attempt Classify(const Result<HttpResponse>& response, std::string_view what);
  void Heartbeat(Entry* e);
  Result<std::string> EntityFor(WriterStream* stream);
  Result<HttpResponse> Call(std::string_view method, const std::string& path, std::string_view body,
                            const std::string& api_key,
                            std::string_view content_type = "application/json");
  // Asks the server which batch encodings it reads (sets format_); thread only.
  void DetectIngestFormat();

  // The next record's binary body, encoded ahead by the prep worker.
  struct Prepared {
    const WriterStream* stream = nullptr;
    uint64_t record_seq = 0;
    int64_t upload_seq = 0;
    std::string body;
    BatchJsonStats stats;
    bool ready = false;
  };
  // Hands `s` to the prep worker, which encodes the record after the peeked one into
  // prepared_; FinishPrepare waits until it is done. Upload thread only, between them it must
  // not touch `s` nor prepared_.
  void StartPrepare(WriterStream* s);
  void FinishPrepare();
  void PrepLoop();
  void Prepare(WriterStream* s);  // on the prep worker

  enum class IngestFormat { kUnknown, kJson, kBinary };

  const std::string base_url_;
  const SenderOptions options_;
  HttpClient http_;                               // used only by the thread
  Backoff backoff_;                               // used only by the thread
  std::map<std::string, std::string> entities_;   // api key -> entity; thread only
  IngestFormat format_ = IngestFormat::kUnknown;  // thread only
  std::string body_;                              // binary batch body; thread only
  Prepared prepared_;  // the prep worker's while a job runs, else the upload thread's

  std::mutex prep_mu_;  // guards the three below; never held with mu_
  std::condition_variable prep_cv_;
  WriterStream* prep_job_ = nullptr;  // set by StartPrepare, cleared when the job is done
  bool prep_stop_ = false;
  std::thread prep_thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Entry>> entries_;
  size_t next_ = 0;        // round-robin cursor
  Entry* busy_ = nullptr;  // the entry the thread works on (without mu_)
  uint64_t wake_generation_ = 1;
  // Server-wide backoff (monotonic clock, like all its timers); written under mu_, read anywhere.
  std::atomic<int64_t> retry_at_ms_{0};
  bool stop_ = false;
  bool started_ = false;
  SenderStats stats_;
  std::thread thread_;
};

}  // namespace cohort::agent
