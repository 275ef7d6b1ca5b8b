// ProgressTracker: what the `hung` and `stale_metric` rules need to know about live writers,
// kept in memory from what the server sees anyway (batches, heartbeats, writer ends) — never read
// back from stored series. Per writer: its highest step and when it last advanced, a smoothed
// time per step, when it was last heard of (heartbeat or batch), and when watched keys last got
// a point. Evaluate() finds, at a tick:
//   hung writers: alive (heard of within kAliveMs) but their step has not advanced for longer
//     than max(factor x the job's step time, min_minutes) while another writer of the run
//     advanced since, past its step (a writer at the run's highest step waits, it is not hung);
//     or, when no live writer of the run advanced that long, the run as a whole
//     (label ""), naming as suspects the writers whose step is behind the others, each of which
//     is also found on its own (a writer hung before the others stopped stays hung: its alert is
//     not resolved by the run's);
//   stale keys: a watched key of a live writer without a new point for longer than `minutes`.
// The job's step time is the median of its writers' smoothed times per step.
// For the `straggler` and `gpu_underused` rules it also keeps, per writer, the (step, wall time)
// of its last history rows, its last perf/step_time values and its GPU utilisation samples of the
// last kGpuWindowMs (RankSamples, given with the batch), handed out by RankSnapshot().
//
// Threading: thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "series/types.h"
#include "store/run_types.h"

namespace cohort::alerts {

struct WriterProgressView {
  std::string label;
  int64_t last_step = -1;
  int64_t last_advance_ms = 0;
  int64_t last_seen_ms = 0;
};

struct HungFinding {
  store::RunRef run;
  std::string label;  // "" for the run as a whole
  int64_t stalled_ms = 0;
  int64_t threshold_ms = 0;
  double step_time_ms = 0;
  std::vector<WriterProgressView> writers;  // the hung writer, or every live writer of the run
  std::vector<std::string> suspects;        // run-level: the writers behind the others
};

struct StaleFinding {
  store::RunRef run;
  std::string label, key;
  int64_t last_point_ms = 0;
};

// What one batch brings for the rank rules (straggler, gpu_underused).
struct RankSamples {
  std::vector<series::Point> clock;             // (step, time_ms) of its history rows
  std::vector<double> step_time_s;              // perf/step_time values
  std::vector<std::pair<int64_t, double>> gpu;  // (time_ms, mean % over the GPUs) per system row
  size_t keep = 0;  // clock points and step times kept per writer (the largest window + 1)
};

// The rank signals of the live writers of one run (RankSnapshot).
struct WriterRanks {
  std::string label;
  std::vector<series::Point> clock;
  std::vector<double> step_time_s;
  std::optional<double> gpu_util;  // mean over its samples of the last kGpuWindowMs
  int64_t gpu_samples = 0;
};
struct RunRanks {
  store::RunRef run;
  std::vector<WriterRanks> writers;  // live writers (heard of within kAliveMs), by label
};

class ProgressTracker {
 public:
  static constexpr int64_t kAliveMs = 90'000;  // three of the agent's heartbeat intervals
  static constexpr size_t kMaxWriters = 100'000;
  static constexpr int64_t kGpuWindowMs = 300'000;  // GPU utilisation: mean over 5 minutes

  // A batch of the writer stored at now_ms: its highest known step (-1: none) and the keys of
  // its columns.
  void OnBatch(const store::RunRef& ref, const std::string& label, int64_t max_step,
               const std::vector<std::string>& keys, int64_t now_ms,
               const RankSamples* samples = nullptr) COHORT_EXCLUDES(mu_);
  void OnHeartbeat(const store::RunRef& ref, const std::string& label, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  void Forget(const store::RunRef& ref, const std::string& label) COHORT_EXCLUDES(mu_);
  // A watched key of the writer whose last point came at `last_point_ms` (a stale_metric alert a
  // restarted server takes over): watched from then on, unless a batch brought it already. The
  // writer counts as alive once it is heard of.
  void SeedKey(const store::RunRef& ref, const std::string& label, const std::string& key,
               int64_t last_point_ms) COHORT_EXCLUDES(mu_);

  // Hung writers and runs, with the factor and minimum `params` gives for a run (nullopt: the
  // run is not watched). `params` and `watch` are called under the tracker's lock: they must be
  // quick and take no lock that is held while calling the tracker.
  struct HungParams {
    double factor = 5;
    int64_t min_ms = 600'000;
  };
  std::vector<HungFinding> FindHung(
      int64_t now_ms,
      const std::function<std::optional<HungParams>(const store::RunRef&)>& params) const
      COHORT_EXCLUDES(mu_);
  // Keys of live writers matching `watch(run, key)` (returns the rule's minutes in ms, or
  // nullopt) without a point for longer than that.
  std::vector<StaleFinding> FindStale(
      int64_t now_ms,
      const std::function<std::optional<int64_t>(const store::RunRef&, const std::string&)>& watch)
      const COHORT_EXCLUDES(mu_);

  // The rank signals of the live writers of every run `want(run)` selects (called under the
  // tracker's lock, as `params` above).
  std::vector<RunRanks> RankSnapshot(int64_t now_ms,
                                     const std::function<bool(const store::RunRef&)>& want) const
      COHORT_EXCLUDES(mu_);

  size_t writers() const COHORT_EXCLUDES(mu_);
  // The (entity, project) of every run tracked.
  std::vector<std::pair<std::string, std::string>> Projects() const COHORT_EXCLUDES(mu_);

 private:
  struct Writer {
    int64_t last_step = -1;
    int64_t last_advance_ms = 0;
    int64_t last_seen_ms = 0;
    double step_ms = 0;  // smoothed ms per step; 0 until it advanced twice
    std::unordered_map<std::string, int64_t> key_last_ms;
    std::deque<series::Point> clock;             // rank rules: last history rows (step, time)
    std::deque<double> step_time_s;              // ... perf/step_time values
    std::deque<std::pair<int64_t, double>> gpu;  // ... GPU utilisation (time, %), kGpuWindowMs
  };
  struct Run {
    store::RunRef ref;
    std::map<std::string, Writer> writers;  // by label
  };
  static std::string RunKey(const store::RunRef& ref);

  mutable Mutex mu_;
  std::unordered_map<std::string, Run> runs_ COHORT_GUARDED_BY(mu_);
  size_t writer_count_ COHORT_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::alerts
