// HeartbeatCoalescer: writers' heartbeats kept in memory and written to the store together,
// about once a second, in one Store::Heartbeats call. A heartbeat only moves a writer's
// last-seen time, so 10,000 agents heartbeating cost one store transaction per second instead of
// hundreds, and a heartbeat is answered at once instead of queueing behind ingest for the store.
//
// Record() answers kNotFound for a writer that does not exist: the first heartbeat of a writer
// the coalescer does not know is checked against the store (a read, which never waits for
// writes); the labels of that run's writers are then known. A heartbeat of a known writer is
// only remembered. Heartbeat times are never moved back. What is pending is lost if the server
// process dies: at most one flush interval of last-seen times, never data. The sweeper that marks
// writers with stale heartbeats crashed calls Flush() first, so it never reads a last-seen time
// older than what was answered.
//
// Threading: thread-safe. Flush() may run on any thread (the flusher, the sweeper, Stop()).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "store/store.h"

namespace cohort::api {

class HeartbeatCoalescer {
 public:
  // Called after a flush for each writer its heartbeat brought back to running (the crash sweep
  // had marked it crashed: store::WriterStore::Heartbeat), on the flushing thread.
  using RevivedFn = std::function<void(const store::HeartbeatUpdate&)>;
  // `store` must outlive the coalescer.
  explicit HeartbeatCoalescer(store::WriterStore* store, int flush_interval_ms = 1000,
                              RevivedFn on_revived = {})
      : store_(store), flush_interval_ms_(flush_interval_ms), on_revived_(std::move(on_revived)) {}
  ~HeartbeatCoalescer();  // Stop()
  HeartbeatCoalescer(const HeartbeatCoalescer&) = delete;
  HeartbeatCoalescer& operator=(const HeartbeatCoalescer&) = delete;

  // Starts the thread that flushes every flush interval.
  void Start() COHORT_EXCLUDES(loop_mu_);
  // Stops the flusher and writes what is pending. Idempotent.
  void Stop() COHORT_EXCLUDES(loop_mu_, flush_mu_, mu_);

  // Remembers the heartbeat of (ref, label) at now_ms. kNotFound when there is no such writer;
  // other errors come from the store's read.
  Status Record(const store::RunRef& ref, const std::string& label, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // Writes every pending heartbeat to the store (one Store::Heartbeats call). On an error the
  // heartbeats stay pending for the next flush.
  Status Flush() COHORT_EXCLUDES(flush_mu_, mu_);

  // Pending heartbeats (distinct writers) and flushes so far, for tests and /metrics.
  size_t pending() const COHORT_EXCLUDES(mu_);
  int64_t flushes() const COHORT_EXCLUDES(mu_);

 private:
  static constexpr size_t kMaxKnown = 1 << 20;  // known writers kept, at most

  static std::string Key(const store::RunRef& ref, const std::string& label);
  void FlushLoop() COHORT_EXCLUDES(loop_mu_, flush_mu_, mu_);

  store::WriterStore* const store_;
  const int flush_interval_ms_;
  const RevivedFn on_revived_;

  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(flush_mu_);
  std::unordered_map<std::string, store::HeartbeatUpdate> pending_ COHORT_GUARDED_BY(mu_);
  // Writers that exist (as last read).
  std::unordered_set<std::string> known_ COHORT_GUARDED_BY(mu_);
  int64_t flushes_ COHORT_GUARDED_BY(mu_) = 0;

  Mutex flush_mu_;  // one flush at a time (keeps failed heartbeats' re-queue ordered)
  Mutex loop_mu_;
  CondVar loop_cv_;
  bool stopping_ COHORT_GUARDED_BY(loop_mu_) = false;
  std::thread flusher_;
};

}  // namespace cohort::api
