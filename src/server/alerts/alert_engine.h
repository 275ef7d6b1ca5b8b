// AlertEngine: evaluates a project's alert rules (alert_rules.h) incrementally, as the server
// sees things happen — never by rescanning series:
//   OnBatch          metric_nonfinite and metric_threshold over the keys and values of one
//                    ingested batch;
//   HandleWriterEnds writer_state for the writers that ended (finished, or marked crashed by
//                    the heartbeat sweep), read from the store, which records each end as
//                    unhandled in the transaction that ends the writer: an end is never lost to
//                    a server dying or a store error before its alert (writer_ends.cc);
//   Tick             hung and stale_metric, at each heartbeat sweep, over what OnBatch and
//                    OnHeartbeat noted in memory (progress_tracker.h); resolved at the first
//                    tick that no longer finds them. Also straggler and gpu_underused
//                    (alert_ranks.cc): the rank insight (insight/straggler.h) over the steps,
//                    step times and GPU utilisation OnBatch noted per writer, raised once a
//                    writer has been flagged at every tick for the rule's for_minutes. The
//                    first tick of a process takes over the alerts of these rules left open in
//                    the store (a restart, a server gone): resolved at once when their writer
//                    no longer runs, else decided again once the rule has had its time window
//                    to find them again (a stale key is watched from its last point at once).
// A condition opens one alert per (run, writer, rule, key) through the store (deduplicated
// there), bumped at most every kBumpIntervalMs while it lasts, and is resolved when it clears
// (a threshold's value back on the good side, a finite value after a NaN). What is open is
// remembered per writer (read from the store the first time a writer is seen, and again after
// kRulesTtlMs: another server may have opened or resolved one), so a batch whose values are all
// fine costs no store call. Rules are cached per project and read again
// after Invalidate (a rule changed here) or kRulesTtlMs (changed by another server); a project's
// default rules are created on first use.
//
// Threading: thread-safe. Store calls run without the engine's lock held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "insight/straggler.h"
#include "server/alerts/alert_rules.h"
#include "server/alerts/progress_tracker.h"
#include "store/store.h"

namespace cohort::alerts {

// The rules of one project as evaluated, with a cache of which metric rules match which key.
class ProjectRules {
 public:
  explicit ProjectRules(std::vector<RuleSpec> rules);
  const std::vector<RuleSpec>& rules() const { return rules_; }
  bool has_metric_rules() const { return has_metric_rules_; }
  // Whether an enabled hung, stale_metric, straggler or gpu_underused rule needs the writers'
  // progress.
  bool has_progress_rules() const { return has_progress_rules_; }
  // Enabled straggler rules (steps and step times kept per writer) and gpu_underused rules (GPU
  // utilisation kept per writer); straggler rules also note GPU utilisation (one of its signals).
  bool has_straggler_rules() const { return has_straggler_rules_; }
  bool has_gpu_rules() const { return has_gpu_rules_; }
  // Indexes (into rules()) of the enabled metric rules whose key glob matches `key`.
  std::vector<int> MetricRulesFor(const std::string& key) const COHORT_EXCLUDES(mu_);

 private:
  std::vector<RuleSpec> rules_;
  bool has_metric_rules_ = false;
  bool has_progress_rules_ = false;
  bool has_straggler_rules_ = false;
  bool has_gpu_rules_ = false;
  mutable Mutex mu_;
  mutable std::unordered_map<std::string, std::vector<int>> matches_ COHORT_GUARDED_BY(mu_);
};

class AlertEngine {
 public:
  static constexpr int64_t kRulesTtlMs = 30'000;
  static constexpr int64_t kBumpIntervalMs = 10'000;
  // More writers of one run than this found crashed at once raise one run-level alert.
  static constexpr size_t kMaxWriterAlertsPerSweep = 4;
  // Writer ends handled per HandleWriterEnds call at most (the rest at the next).
  static constexpr int kMaxEndsPerPass = 1000;

  explicit AlertEngine(store::Store* store);
  // `straggler` rules' defaults (those of GET .../ranks/stragglers).
  AlertEngine(store::Store* store, const insight::StragglerOptions& straggler_defaults);

  // The project's rules (its defaults created the first time), cached.
  Result<std::shared_ptr<const ProjectRules>> Rules(const std::string& entity,
                                                    const std::string& project, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // Forgets the cached rules of the project (a rule was created, changed or deleted).
  void Invalidate(const std::string& entity, const std::string& project) COHORT_EXCLUDES(mu_);

  void OnBatch(const store::RunRef& ref, const std::string& label, const store::IngestBatch& batch,
               const store::IngestResult& result, int64_t now_ms) COHORT_EXCLUDES(mu_);
  // A writer joined again (a resumed run): what its earlier process left open (a crash, a NaN...)
  // is resolved, so that its next end or condition opens a new alert and notifies again.
  void OnWriterRejoined(const store::RunRef& ref, const std::string& label, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // A writer marked crashed heartbeats again (store.h WriterStore::Heartbeat): the same process,
  // so only its writer_state alerts (the crash) resolve; its other conditions stay open. A
  // run-level "N writers crashed" alert listing it is revised to the writers it lists that are
  // still crashed: kept open with them while more than kMaxWriterAlertsPerSweep, else resolved
  // and each of them alerted on its own (as HandleWriterEnds would have raised them).
  void OnWriterRevived(const store::RunRef& ref, const std::string& label, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // The heartbeat sweep ended the run as orphaned (store.h StaleSweep::orphans_ended): no writer
  // end carries that end, so the caller tells it here. Resolves what a run's end resolves in
  // HandleWriterEnds (the run's own hung, stale_metric, straggler and gpu_underused alerts).
  void OnRunEnded(const store::RunRef& ref, int64_t now_ms) COHORT_EXCLUDES(mu_);
  // Handles every writer end the store has not handled yet (store.h ListUnhandledWriterEnds):
  // raises writer_state (more than kMaxWriterAlertsPerSweep crashed writers of one run: one
  // run-level alert; these raises are not held back by the project's rate limit) and resolves
  // what an ended writer can no longer clear: its code alerts and its hung, stale_metric,
  // straggler and gpu_underused alerts (the run's too, once the run ended). An end is marked
  // handled only once all of that is stored; otherwise the next call (this server's next Tick,
  // or another server's) does it. The finish routes call it after a writer ends; Tick too.
  void HandleWriterEnds(int64_t now_ms) COHORT_EXCLUDES(mu_, ends_mu_);
  // A heartbeat of the writer (a live process whose step may not advance: `hung`).
  void OnHeartbeat(const store::RunRef& ref, const std::string& label, int64_t now_ms);
  // HandleWriterEnds, then evaluates the hung, stale_metric, straggler and gpu_underused rules
  // (the server's heartbeat sweep calls it).
  void Tick(int64_t now_ms) COHORT_EXCLUDES(mu_, ends_mu_);

  // Store calls that failed (logged), and alerts not opened because of the project's rate limit.
  int64_t errors() const COHORT_EXCLUDES(mu_);
  int64_t rate_limited() const COHORT_EXCLUDES(mu_);

 private:
  struct Condition {
    bool open = false;
    int64_t last_raised_ms = 0;
  };
  struct WriterConditions {
    std::unordered_map<std::string, Condition> by_key;  // condition_key ->
    int64_t loaded_ms = 0;                              // read from the store then
  };
  // One thing a batch saw for one (rule, key).
  struct Verdict {
    const RuleSpec* rule = nullptr;
    std::string key;
    bool bad = false;          // the condition held at some row of the batch
    bool clear_at_end = true;  // ... and no longer at the batch's last relevant row
    int64_t step = -1;         // the first bad row's step (-1: unknown)
    double value = 0;          // ... and value
  };

  // The writer's open conditions, read from the store the first time and after kRulesTtlMs.
  Status EnsureLoaded(const store::RunRef& ref, const std::string& label, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  void Apply(const store::RunRef& ref, const std::string& label, const Verdict& v, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // writer_ends.cc. Each returns whether everything it had to store was stored.
  bool RaiseWriterState(const ProjectRules& rules, const store::EndedWriter& writer,
                        int64_t now_ms) COHORT_EXCLUDES(mu_);
  bool RaiseRunCrashed(const ProjectRules& rules, const store::RunRef& ref,
                       const std::vector<const store::EndedWriter*>& writers, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // OnWriterRevived: revises the run's open run-level crash alerts to their writers still
  // crashed.
  bool ReviseRunCrashed(const ProjectRules& rules, const store::RunRef& ref, int64_t now_ms)
      COHORT_EXCLUDES(mu_);
  // Resolves the alerts the writer (label "": the run) can no longer clear once it ended.
  bool ResolveEnded(const ProjectRules& rules, const store::RunRef& ref, const std::string& label,
                    int64_t now_ms) COHORT_EXCLUDES(mu_);
  // The first Tick of the process: takes over the open alerts of the tick rules (see above).
  // Returns false when the store could not be read (tried again at the next tick).
  bool AdoptOpenTickAlerts(int64_t now_ms) COHORT_EXCLUDES(mu_);
  // Forgets what is remembered of the writer (label "": of the run's own conditions).
  void Forget(const store::RunRef& ref, const std::string& label) COHORT_EXCLUDES(mu_);
  // Opens (or bumps) one condition; returns whether it is open now.
  bool Raise(const store::AlertRaise& raise) COHORT_EXCLUDES(mu_);
  void Failed(const char* what, const Status& s) COHORT_EXCLUDES(mu_);
  // (writer key, condition key) -> the raise.
  using Wanted = std::map<std::pair<std::string, std::string>, store::AlertRaise>;
  // alert_ranks.cc: adds to `want` the writers of the project's runs that `rule` (straggler or
  // gpu_underused) flags and that have been flagged for its for_minutes; `flagged` gets every
  // writer flagged now (what is not is forgotten by PruneRankSince).
  void FindRankAlerts(const RuleSpec& rule, const std::pair<std::string, std::string>& project,
                      int64_t now_ms, Wanted* want,
                      std::set<std::pair<std::string, std::string>>* flagged) COHORT_EXCLUDES(mu_);
  void PruneRankSince(const std::set<std::pair<std::string, std::string>>& flagged)
      COHORT_EXCLUDES(mu_);
  // The samples of one batch the project's rank rules need.
  RankSamples RankSamplesOf(const ProjectRules& rules, const store::IngestBatch& batch,
                            const std::vector<int64_t>& steps) const;

  store::Store* const store_;
  const insight::StragglerOptions straggler_defaults_;
  mutable Mutex mu_;
  struct CachedRules {
    std::shared_ptr<const ProjectRules> rules;
    int64_t loaded_ms = 0;
  };
  std::map<std::pair<std::string, std::string>, CachedRules> rules_ COHORT_GUARDED_BY(mu_);
  std::set<std::pair<std::string, std::string>> defaults_installed_ COHORT_GUARDED_BY(mu_);
  std::unordered_map<std::string, WriterConditions> writers_ COHORT_GUARDED_BY(mu_);
  int64_t errors_ COHORT_GUARDED_BY(mu_) = 0;
  int64_t rate_limited_ COHORT_GUARDED_BY(mu_) = 0;
  ProgressTracker tracker_;
  // Conditions Tick opened (or took over) and has not resolved: (writer key, condition key) ->
  // the raise.
  std::map<std::pair<std::string, std::string>, store::AlertRaise> tick_open_
      COHORT_GUARDED_BY(mu_);
  // Alerts taken over from the store, kept open until then unless found again.
  std::map<std::pair<std::string, std::string>, int64_t> adopted_until_ms_ COHORT_GUARDED_BY(mu_);
  bool adopted_ COHORT_GUARDED_BY(mu_) = false;
  Mutex ends_mu_;  // one HandleWriterEnds at a time in this process
  // Rank rules: (writer key, condition key) -> since when it has been flagged at every tick.
  std::map<std::pair<std::string, std::string>, int64_t> rank_since_ COHORT_GUARDED_BY(mu_);
};

// The key of a writer of a run in the engine's maps.
std::string WriterKey(const store::RunRef& ref, const std::string& label);
// The utilisation series of one GPU: system/gpu.<index>.gpu (src/agent/monitor/source.h).
bool IsGpuUtilKey(std::string_view key);

// The condition key of a rule alert: "rule:<id>" (writer_state) or "rule:<id>:<key>".
std::string RuleConditionKey(const RuleSpec& rule, const std::string& key);
// The alert `rule` raises on the writer `label` ("": the run itself) of `run`, for `key` (""
// when the rule is not per key): what every rule alert takes from its rule, plus its words.
store::AlertRaise RuleRaise(const RuleSpec& rule, const store::RunRef& run,
                            const std::string& label, const std::string& key, std::string title,
                            std::string text, std::string evidence_json, int64_t now_ms);
// Whether Tick decides the rule's alerts (hung, stale_metric, straggler, gpu_underused).
bool IsTickRule(RuleKind kind);

}  // namespace cohort::alerts
