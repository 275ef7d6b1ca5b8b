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
//   Lock order: io_mu, then mu, then the buffer's locks.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
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

namespace cohort {

namespace client {
// A random non-zero 63-bit session id (frames are numbered within it).
uint64_t NewSessionId();
}  // namespace client

struct Run::Impl {
  struct PendingFrame {
    uint64_t number = 0;
    agent::MessageType type = agent::MessageType::kLog;
    std::string body;
  };

  explicit Impl(client::ResolvedSettings resolved);
  ~Impl();  // finishes the run (exit code 0) if nobody did

  // Connects (or spawns the shared agent, or starts a private one) and opens the writer, all before
  // `deadline_ms` (agent::MonoMillis clock, as every deadline here). Sets entity/run_name/offline
  // from the reply.
  Status Start(int64_t deadline_ms);
  Status Finish(int exit_code, std::string_view state);

  void RequestFlush();
  Status EnqueueUpdate(std::string body);
  // Sends summary keys the user set; those keys are then never overwritten by last values.
  Status EnqueueSummary(boost::json::object summary);
  // The run's display name: Init's (or the server's), then the latest SetName.
  const std::string& current_name();
  void SetLocalName(std::string name);
  void AddConsoleLine(bool is_stderr, int64_t time_ms, std::string line);

  // fork() handlers (see run.cc).
  void ForkPrepare();
  void ForkParent();
  void ForkChild();
  // First use in a forked child: a new session and label, a new flush thread. True when this
  // call started it (false when it was started already or is not a pending child).
  bool StartInChild();

  // ---- immutable after Start (apart from the fork child's re-labelling) ----
  client::ResolvedSettings rs;
  agent::OpenRequest open;  // the first open; reconnects send a trimmed copy
  agent::AgentPaths paths;
  std::string entity;
  std::string run_name;
  int owner_pid = 0;

  client::LogBuffer buffer;
  std::atomic<bool> finished{false};
  std::atomic<bool> offline{false};
  std::atomic<bool> child_pending{false};  // forked child that has not started yet
  std::atomic<bool> flush_requested{false};

 private:
  void FlushLoop();
  // Moves buffered data into frames, (re)connects if needed, sends, reads acks.
  void FlushOnce(int64_t mono_deadline_ms);  // deadline on the monotonic clock (MonoNanos)
  // Moves buffered data into frames; with `final` (Finish) also the pending last-value summary,
  // otherwise at most every kSummaryIntervalMs. Requires mu.
  void DrainBufferLocked(bool final = false);
  void NoteLastValuesLocked(const batch::Batch& batch);  // requires mu
  void EnqueueLastValuesLocked();                           // requires mu
  bool EnsureTransport(int64_t mono_deadline_ms);           // requires io_mu; monotonic
  void DropTransport(const Status& why);                    // requires io_mu
  Result<agent::OpenReply> OpenOn(client::AgentTransport* t, const agent::OpenRequest& req,
                                  int64_t deadline_ms);
  // Start's way back to an agent that holds the writer's WAL: reads the answer to the open
  // outstanding on `*t`, or opens again on a new connection when that one broke, until
  // `deadline_ms`.
  Result<agent::OpenReply> AwaitAgentOpen(std::unique_ptr<client::AgentTransport>* t,
                                          int64_t deadline_ms);
  void StartFlusher();
  void StopFlusher();

  std::mutex io_mu;
  std::unique_ptr<client::AgentTransport> transport;  // guarded by io_mu
  bool private_agent = false;  // guarded by io_mu; reconnects start a private agent too
  int64_t next_connect_ms = 0;                   // monotonic; guarded by io_mu
  int connect_failures = 0;                      // guarded by io_mu
  uint64_t sent_upto = 0;                        // guarded by io_mu

  std::mutex mu;
  std::condition_variable cv;
  std::deque<PendingFrame> frames;  // guarded by mu; numbers ascending, acked ones popped
  size_t frame_bytes = 0;           // guarded by mu
  uint64_t next_frame = 1;          // guarded by mu
  bool stop = false;                // guarded by mu
  batch::Batch scratch;             // guarded by mu
  // Last-value summary (only for the writer that controls the run): the last logged value of
  // each key not yet sent, and the keys the user set explicitly (never overwritten).
  bool auto_summary = false;                              // set before the flusher starts
  std::unordered_map<std::string, double> summary_dirty;  // guarded by mu
  std::unordered_set<std::string> summary_explicit;       // guarded by mu
  int64_t summary_sent_ms = 0;                            // monotonic; guarded by mu
  std::vector<uint32_t> last_cell_of_key;                 // guarded by mu (scratch)

  std::mutex name_mu;
  std::deque<std::string> names;  // guarded by name_mu; never shrinks (name() returns refs)

  std::mutex finish_mu;  // serialises Finish
  std::unique_ptr<std::thread> flusher;
  std::unique_ptr<client::ConsoleCapture> capture;
};

}  // namespace cohort
