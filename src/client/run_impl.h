// Run::Impl: the state behind a cohort::Run: the resolved settings, the LogBuffer that Log()
// appends to, the queue of numbered frames not yet acknowledged, the transport to the agent (the
// machine's shared agent, or a private agent of this process), the flush thread and the console
// capture.
//
// Threading:
//   - Log/Print touch only `buffer` (its own short lock) and atomics.
//   - `mu` guards the frame queue and the flags; turning buffered data into frames happens
//     under it so that frames are numbered in the order the data was logged.
//   - `io_mu` serialises use of `transport` (the flush thread, Finish, the fork handlers).
//   Lock order: finish_mu, io_mu, mu, then the buffer's locks (COHORT_ACQUIRED_AFTER below).
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agent/agent_paths.h"
#include "agent/protocol.h"
#include "client/config.h"
#include "client/console_capture.h"
#include "client/log_buffer.h"
#include "client/transport.h"
#include "cohort/cohort.h"
#include "core/batch_format.h"
#include "core/mutex.h"

namespace cohort {

namespace client {
// A random non-zero 63-bit session id (frames are numbered within it).
uint64_t NewSessionId();
// How often the last-value summary goes out while the run goes on (and at Finish).
inline constexpr int64_t kSummaryIntervalMs = 10000;
}  // namespace client

struct Run::Impl {
  struct PendingFrame {
    uint64_t number = 0;
    agent::MessageType type = agent::MessageType::kLog;
    std::string body;
    int64_t values = 0;  // kLog: the batch's cells, histograms and media sets (for dropped())
  };

  explicit Impl(client::ResolvedSettings resolved);
  ~Impl();  // finishes the run (exit code 0) if nobody did

  // Connects (or spawns the shared agent, or starts a private one) and opens the writer, all before
  // `deadline_ms` (agent::MonoMillis clock, as every deadline here). Sets entity/run_name/offline
  // from the reply.
  Status Start(int64_t deadline_ms) COHORT_EXCLUDES(io_mu, mu);
  Status Finish(int exit_code, std::string_view state) COHORT_EXCLUDES(finish_mu, io_mu, mu);
  // Values of frames given up (the queue's cap, or a finish no agent confirmed).
  int64_t frames_dropped() const { return frames_dropped_values.load(); }

  void RequestFlush() COHORT_EXCLUDES(mu);
  Status EnqueueUpdate(std::string body) COHORT_EXCLUDES(mu);
  // Queues an alert frame (`body`: agent/alert_body.h) after what was logged before it, unless
  // an alert titled `title` was queued less than `wait_ms` ago (then it is dropped: OK).
  // Notes what the agent of a new transport takes (agent_takes_alerts, agent_pid_now).
  void NoteAgent(const client::AgentTransport& t);
  Status EnqueueAlert(const std::string& title, std::string body, int64_t wait_ms)
      COHORT_EXCLUDES(mu);
  // Sends summary keys the user set; each keeps the value set until the key is logged again
  // (the last write wins, as in the vendor's SDK).
  Status EnqueueSummary(boost::json::object summary) COHORT_EXCLUDES(mu);
  // The last logged value of each key whose last write was a Log (not a later EnqueueSummary),
  // what was buffered included (it is drained into frames first).
  std::map<std::string, double> LastLoggedValues() COHORT_EXCLUDES(mu);
  // The run's display name: Init's (or the server's), then the latest SetName.
  const std::string& current_name() COHORT_EXCLUDES(name_mu);
  void SetLocalName(std::string name) COHORT_EXCLUDES(name_mu);
  void AddConsoleLine(bool is_stderr, int64_t time_ms, std::string line) COHORT_EXCLUDES(mu);

  // ---- artifacts (run_artifacts.cc) ----
  // Queues an intent frame (sets its "run" and "writer"); returns its id.
  Result<std::string> EnqueueArtifactIntent(std::string_view intent_json)
      COHORT_EXCLUDES(mu, art_mu);
  // Hashes and stages `artifact` on a background thread, then queues its intent.
  Result<std::string> LogArtifact(const Artifact& artifact) COHORT_EXCLUDES(mu, art_mu);
  // Asks the agent (when connected) and returns the latest known state of `id`.
  Result<ArtifactVersion> ArtifactState(const std::string& id, int64_t mono_deadline_ms)
      COHORT_EXCLUDES(io_mu, mu, art_mu);
  Result<ArtifactVersion> WaitArtifact(const std::string& id, double timeout_s)
      COHORT_EXCLUDES(io_mu, mu, art_mu);
  std::string staging_dir() const COHORT_EXCLUDES(art_mu);

  // fork() handlers (see run.cc): every lock is held from ForkPrepare to ForkParent/ForkChild.
  void ForkPrepare() COHORT_ACQUIRE(finish_mu, io_mu, mu, buffer.fork_take_mu(), buffer.fork_mu());
  void ForkParent() COHORT_RELEASE(finish_mu, io_mu, mu, buffer.fork_take_mu(), buffer.fork_mu());
  void ForkChild() COHORT_RELEASE(finish_mu, io_mu, mu, buffer.fork_take_mu(), buffer.fork_mu());
  // First use in a forked child: a new session and label, a new flush thread. True when this
  // call started it (false when it was started already or is not a pending child).
  bool StartInChild() COHORT_EXCLUDES(io_mu, mu);

  // ---- immutable after Start (apart from the fork child's re-labelling) ----
  client::ResolvedSettings rs;
  agent::OpenRequest open;  // the first open; reconnects send a trimmed copy
  agent::AgentPaths paths;
  std::string entity;
  std::string run_name;
  std::string run_fields;  // the open reply's (agent::OpenReply::run_fields)
  int owner_pid = 0;

  client::LogBuffer buffer;
  std::atomic<bool> finished{false};
  std::atomic<bool> offline{false};
  // The server's media limits from the agent's open reply (0: not known).
  std::atomic<int64_t> max_media_file_bytes{0};
  std::atomic<int64_t> max_media_per_step{0};
  std::atomic<bool> child_pending{false};  // forked child that has not started yet
  // The time of the last alert call: each call gets a later one (its identity on the server,
  // where a post retried with the same time bumps the alert it opened instead of notifying).
  std::atomic<int64_t> last_alert_ms{0};
  std::atomic<bool> flush_requested{false};
  // What the agent of the current transport said in its hello: whether it takes alert frames
  // (an older agent still running does not), and its pid (for the message saying so).
  std::atomic<bool> agent_takes_alerts{false};
  std::atomic<bool> agent_takes_config_unset{false};
  std::atomic<int64_t> agent_pid_now{0};

 private:
  void FlushLoop() COHORT_EXCLUDES(io_mu, mu);
  // Moves buffered data into frames, (re)connects if needed, sends, reads acks. The deadline is
  // on the monotonic clock (MonoNanos).
  void FlushOnce(int64_t mono_deadline_ms) COHORT_EXCLUDES(io_mu, mu);
  // Moves buffered data into frames; with `final` (Finish) also the pending last-value summary,
  // otherwise at most every kSummaryIntervalMs.
  void DrainBufferLocked(bool final = false) COHORT_REQUIRES(mu);
  void NoteLastValuesLocked(const batch::Batch& batch) COHORT_REQUIRES(mu);
  void EnqueueLastValuesLocked() COHORT_REQUIRES(mu);
  // The deadline is on the monotonic clock.
  bool EnsureTransport(int64_t mono_deadline_ms) COHORT_REQUIRES(io_mu) COHORT_EXCLUDES(mu);
  void DropTransport(const Status& why) COHORT_REQUIRES(io_mu) COHORT_EXCLUDES(mu);
  Result<agent::OpenReply> OpenOn(client::AgentTransport* t, const agent::OpenRequest& req,
                                  int64_t deadline_ms);
  // Start's way back to an agent that holds the writer's WAL: reads the answer to the open
  // outstanding on `*t`, or opens again on a new connection when that one broke, until
  // `deadline_ms`.
  Result<agent::OpenReply> AwaitAgentOpen(std::unique_ptr<client::AgentTransport>* t,
                                          int64_t deadline_ms);
  void StartFlusher() COHORT_EXCLUDES(mu);
  void StopFlusher() COHORT_EXCLUDES(mu);
  // Finish's part: joins the hashing threads, then waits until `mono_deadline_ms` for the
  // versions this run logged, drawing progress on stderr; says what is left past it.
  void AwaitArtifactsForFinish(int64_t mono_deadline_ms) COHORT_EXCLUDES(io_mu, mu, art_mu);
  // Refreshes `artifacts` from the agent for `ids` (io_mu held by the caller).
  void QueryArtifactsLocked(const std::vector<std::string>& ids, int64_t mono_deadline_ms)
      COHORT_REQUIRES(io_mu) COHORT_EXCLUDES(mu, art_mu);
  void NoteStaging(const std::string& dir) COHORT_EXCLUDES(art_mu);
  void NoteMediaLimits(const agent::OpenReply& reply);

  Mutex io_mu COHORT_ACQUIRED_AFTER(finish_mu);
  std::unique_ptr<client::AgentTransport> transport COHORT_GUARDED_BY(io_mu);
  // Reconnects start a private agent too.
  bool private_agent COHORT_GUARDED_BY(io_mu) = false;
  int64_t next_connect_ms COHORT_GUARDED_BY(io_mu) = 0;  // monotonic
  int connect_failures COHORT_GUARDED_BY(io_mu) = 0;
  uint64_t sent_upto COHORT_GUARDED_BY(io_mu) = 0;

  Mutex mu COHORT_ACQUIRED_AFTER(io_mu);
  CondVar cv;  // stop or flush_requested set
  // Numbers ascending, acked ones popped.
  std::deque<PendingFrame> frames COHORT_GUARDED_BY(mu);
  size_t frame_bytes COHORT_GUARDED_BY(mu) = 0;
  // FlushOnce is sending frames it points into (without mu): nothing pops them meanwhile (the
  // queue's cap is applied by the next drain instead).
  bool sending COHORT_GUARDED_BY(mu) = false;
  uint64_t next_frame COHORT_GUARDED_BY(mu) = 1;
  bool stop COHORT_GUARDED_BY(mu) = false;
  batch::Batch scratch COHORT_GUARDED_BY(mu);
  // Values of frames given up: dropped by the queue's cap, or never sent when Finish gave up.
  std::atomic<int64_t> frames_dropped_values{0};
  // Last-value summary. `last_values`: the last logged value of each key whose last write was a
  // log (a later EnqueueSummary of the key takes it out; a later log puts it back: the last write
  // wins), for every writer (run.summary reads it). `summary_dirty`: those not sent yet, only
  // for the writer that controls the run (auto_summary).
  bool auto_summary = false;  // set before the flusher starts
  // A worker's first summary write (kept local, not sent) was warned about.
  bool worker_summary_warned COHORT_GUARDED_BY(mu) = false;
  std::unordered_map<std::string, double> last_values COHORT_GUARDED_BY(mu);
  std::unordered_map<std::string, double> summary_dirty COHORT_GUARDED_BY(mu);
  int64_t summary_sent_ms COHORT_GUARDED_BY(mu) = 0;             // monotonic
  std::vector<uint32_t> last_cell_of_key COHORT_GUARDED_BY(mu);  // scratch
  // When an alert of each title was last queued (monotonic ms), for Run::Alert's wait duration.
  std::unordered_map<std::string, int64_t> alert_queued_ms COHORT_GUARDED_BY(mu);

  Mutex name_mu;
  // Never shrinks (name() returns refs).
  std::deque<std::string> names COHORT_GUARDED_BY(name_mu);

  // Artifacts this run logged, by id: their last known state. Taken after mu and io_mu.
  mutable Mutex art_mu COHORT_ACQUIRED_AFTER(mu);
  std::map<std::string, ArtifactVersion> artifacts COHORT_GUARDED_BY(art_mu);
  // The files whose digests the hash cache may have answered, by artifact id (not staged: a
  // staged file is read as it is copied), until the version is committed or failed: a failure
  // because the server found other bytes forgets their entries (docs/formats.md "Hash cache").
  std::map<std::string, std::vector<std::string>> artifact_cached_sources COHORT_GUARDED_BY(art_mu);
  std::string artifact_staging COHORT_GUARDED_BY(art_mu);
  std::vector<std::thread> hashers COHORT_GUARDED_BY(art_mu);
  bool artifacts_closed COHORT_GUARDED_BY(art_mu) = false;  // Finish took the hashers
  // A forked child: the parent's hashing threads do not exist here (leaked, never joined).
  void ForgetArtifactsInChild() COHORT_NO_THREAD_SAFETY_ANALYSIS;

  Mutex finish_mu;  // serialises Finish
  std::unique_ptr<std::thread> flusher;
  std::unique_ptr<client::ConsoleCapture> capture;
};

}  // namespace cohort
