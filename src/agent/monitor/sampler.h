// Sampler: owns the monitor sources and samples them all on a background thread every
// `interval`, handing each batch (one timestamp, all keys) to a callback.
//
// Sources are opened once, on the sampling thread before its first wait (or by the first
// SampleOnce()); a source whose Open() fails is skipped for the Sampler's lifetime and listed
// by skipped_sources(). A source whose Sample() fails contributes nothing that time. Empty
// batches are not delivered.
//
// Threading: Start(), Stop(), SampleOnce() and the accessors are thread-safe. The callback runs
// on the sampling thread, one batch at a time; Stop() waits for a running callback to return,
// so after Stop() returns no callback runs. Calling Stop() from inside the callback only asks
// the thread to end (a later Stop() or the destructor joins it); calling the destructor from
// inside the callback is not allowed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/monitor/source.h"
#include "cohort/status.h"
#include "core/mutex.h"

namespace cohort::monitor {

// The samples of all sources taken at one instant.
struct SampleBatch {
  int64_t time_ms = 0;  // wall clock, ms since the epoch
  std::vector<monitor::Sample> samples;
};

class Sampler {
 public:
  using Callback = std::function<void(SampleBatch batch)>;
  static constexpr std::chrono::milliseconds kDefaultInterval{15000};
  static constexpr std::chrono::milliseconds kMinInterval{100};

  // `interval` below kMinInterval is raised to it. The first batch comes `first_delay` after
  // Start() (default, or negative: one interval); rate sources (CPU) measure over that span.
  // With `sample_at_start` a batch is also taken as the thread starts, before any wait and even
  // when Stop() came first (a writer that ends at once still has one: memory, GPUs, ...; rate
  // sources have measured nothing yet and give no value in it).
  Sampler(std::vector<std::unique_ptr<MonitorSource>> sources, Callback callback,
          std::chrono::milliseconds interval = kDefaultInterval,
          std::chrono::milliseconds first_delay = std::chrono::milliseconds(-1),
          bool sample_at_start = false);
  ~Sampler();  // Stop()
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the sampling thread; the first batch comes first_delay later (or at once with
  // sample_at_start). kFailedPrecondition
  // when already running. May be called again after Stop().
  Status Start() COHORT_EXCLUDES(lifecycle_mu_, mu_);
  // Ends the sampling thread promptly (it waits on a condition variable, never a sleep).
  // Idempotent; a no-op when not running.
  void Stop() COHORT_EXCLUDES(lifecycle_mu_, mu_);
  bool running() const COHORT_EXCLUDES(mu_);

  // Samples every usable source now, on the calling thread, opening the sources first if
  // that has not happened yet. Does not call the callback.
  SampleBatch SampleOnce(int64_t now_ms) COHORT_EXCLUDES(sources_mu_);
  SampleBatch SampleOnce() COHORT_EXCLUDES(sources_mu_);  // at NowMillis()

  // Opens the sources now if that has not happened yet (otherwise a no-op).
  void OpenSources() COHORT_EXCLUDES(sources_mu_);
  // Names of the sources that opened; empty before they are opened.
  std::vector<std::string> active_sources() const COHORT_EXCLUDES(sources_mu_);
  // (name, Open() status) of each source that failed to open and is skipped.
  std::vector<std::pair<std::string, Status>> skipped_sources() const COHORT_EXCLUDES(sources_mu_);

  std::chrono::milliseconds interval() const { return interval_; }

 private:
  void Loop() COHORT_EXCLUDES(mu_, sources_mu_);
  void OpenSourcesLocked() COHORT_REQUIRES(sources_mu_);

  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds first_delay_;
  const bool sample_at_start_;
  const Callback callback_;

  mutable Mutex sources_mu_;
  std::vector<std::unique_ptr<MonitorSource>> sources_ COHORT_GUARDED_BY(sources_mu_);
  bool opened_ COHORT_GUARDED_BY(sources_mu_) = false;
  std::vector<MonitorSource*> active_ COHORT_GUARDED_BY(sources_mu_);
  std::vector<std::pair<std::string, Status>> skipped_ COHORT_GUARDED_BY(sources_mu_);

  Mutex lifecycle_mu_;  // serialises Start() and Stop()
  std::thread thread_ COHORT_GUARDED_BY(lifecycle_mu_);
  std::atomic<std::thread::id> loop_thread_id_{};

  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(lifecycle_mu_);
  CondVar cv_;  // stop_ set
  bool stop_ COHORT_GUARDED_BY(mu_) = false;
  bool running_ COHORT_GUARDED_BY(mu_) = false;
};

}  // namespace cohort::monitor
