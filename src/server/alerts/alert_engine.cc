#include "server/alerts/alert_engine.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>

#include "store/run_state.h"

namespace cohort::alerts {
namespace bj = boost::json;

namespace {

// Metric rules remember which rules match at most this many keys per project.
constexpr size_t kMaxCachedKeys = 20'000;
// Writers whose conditions are remembered; past it, they are forgotten (and loaded again).
constexpr size_t kMaxWriters = 100'000;
// Projects whose rules, and whose installed defaults, are remembered; past it, they are
// forgotten (read from the store again; installing defaults twice changes nothing there).
constexpr size_t kMaxProjects = 10'000;

bool IsMetricRule(const RuleSpec& r) {
  return r.enabled &&
         (r.kind == RuleKind::kMetricNonfinite || r.kind == RuleKind::kMetricThreshold);
}

// JSON has no NaN or infinities: they are written as strings, as the API writes them.
bj::value JsonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// A number for a title: shortest round trip ("5", "0.1", "1e+20"); NaN and infinities by name.
std::string TitleNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// What the metric rules ask of one column, in one pass, so that a rule costs O(1) per column
// (docs/benchmarks.md, "Alert rules on the ingest path").
struct ColumnSummary {
  size_t first_nonfinite = SIZE_MAX;  // index of the first NaN or infinity
  bool last_finite = true;            // the column's last value is finite
  size_t not_nan = 0;                 // values a threshold looks at (infinities included)
  double min = INFINITY, max = -INFINITY, last_not_nan = 0;
};

ColumnSummary Summarize(const std::vector<double>& values) {
  ColumnSummary s;
  for (size_t i = 0; i < values.size(); ++i) {
    const double x = values[i];
    if (std::isfinite(x)) {
      s.min = std::min(s.min, x);
      s.max = std::max(s.max, x);
      s.last_not_nan = x;
      ++s.not_nan;
      continue;
    }
    if (s.first_nonfinite == SIZE_MAX) s.first_nonfinite = i;
    if (!std::isnan(x)) {
      s.min = std::min(s.min, x);
      s.max = std::max(s.max, x);
      s.last_not_nan = x;
      ++s.not_nan;
    }
  }
  s.last_finite = values.empty() || std::isfinite(values.back());
  return s;
}

// The step of each history row: explicit ones as given; assigned ones are known when every row
// of the batch was assigned (the writer's steps before `next_step`), else -1.
std::vector<int64_t> RowSteps(const store::IngestBatch& batch, int64_t next_step) {
  std::vector<int64_t> steps(batch.history_step);
  bool all_assigned = true;
  for (int64_t s : steps) all_assigned = all_assigned && s == store::kAssignStep;
  const int64_t first = next_step - int64_t(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == store::kAssignStep) steps[i] = all_assigned ? first + int64_t(i) : -1;
  }
  return steps;
}

}  // namespace

std::string WriterKey(const store::RunRef& ref, const std::string& label) {
  std::string k;
  k.reserve(ref.entity.size() + ref.project.size() + ref.run_id.size() + label.size() + 3);
  k.append(ref.entity).push_back('\x1f');
  k.append(ref.project).push_back('\x1f');
  k.append(ref.run_id).push_back('\x1f');
  k.append(label);
  return k;
}

std::string RuleConditionKey(const RuleSpec& rule, const std::string& key) {
  std::string out = "rule:" + std::to_string(rule.id);
  if (!key.empty()) out += ":" + key;
  return out;
}

store::AlertRaise RuleRaise(const RuleSpec& rule, const store::RunRef& run,
                            const std::string& label, const std::string& key, std::string title,
                            std::string text, std::string evidence_json, int64_t now_ms) {
  return store::AlertRaise{.entity = run.entity,
                           .project = run.project,
                           .run_id = run.run_id,
                           .writer_label = label,
                           .rule_id = rule.id,
                           .source = "rule",
                           .condition_key = RuleConditionKey(rule, key),
                           .level = rule.level,
                           .title = std::move(title),
                           .text = std::move(text),
                           .evidence_json = std::move(evidence_json),
                           .now_ms = now_ms};
}

bool IsTickRule(RuleKind kind) {
  return kind == RuleKind::kHung || kind == RuleKind::kStaleMetric ||
         kind == RuleKind::kStraggler || kind == RuleKind::kGpuUnderused;
}

ProjectRules::ProjectRules(std::vector<RuleSpec> rules) : rules_(std::move(rules)) {
  for (const RuleSpec& r : rules_) {
    has_metric_rules_ = has_metric_rules_ || IsMetricRule(r);
    has_progress_rules_ = has_progress_rules_ || (r.enabled && IsTickRule(r.kind));
    has_straggler_rules_ = has_straggler_rules_ || (r.enabled && r.kind == RuleKind::kStraggler);
    has_gpu_rules_ = has_gpu_rules_ || (r.enabled && r.kind == RuleKind::kGpuUnderused);
  }
}

std::vector<int> ProjectRules::MetricRulesFor(const std::string& key) const {
  {
    MutexLock lock(&mu_);
    auto it = matches_.find(key);
    if (it != matches_.end()) return it->second;
  }
  std::vector<int> out;
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (IsMetricRule(rules_[i]) && GlobMatch(rules_[i].key, key)) out.push_back(int(i));
  }
  MutexLock lock(&mu_);
  if (matches_.size() < kMaxCachedKeys) matches_.emplace(key, out);
  return out;
}

AlertEngine::AlertEngine(store::Store* store)
    : AlertEngine(store, insight::StragglerOptionsFromEnv()) {}

AlertEngine::AlertEngine(store::Store* store, const insight::StragglerOptions& straggler_defaults)
    : store_(store), straggler_defaults_(straggler_defaults) {}

Result<std::shared_ptr<const ProjectRules>> AlertEngine::Rules(const std::string& entity,
                                                               const std::string& project,
                                                               int64_t now_ms) {
  {
    MutexLock lock(&mu_);
    auto it = rules_.find({entity, project});
    if (it != rules_.end() && now_ms - it->second.loaded_ms < kRulesTtlMs) return it->second.rules;
  }
  bool install = false;  // the project's defaults, once per project and process
  {
    MutexLock lock(&mu_);
    install = !defaults_installed_.count({entity, project});
  }
  if (install) {
    COHORT_RETURN_IF_ERROR(
        store_->InstallDefaultAlertRules(entity, project, DefaultRules(), now_ms).status());
    MutexLock lock(&mu_);
    if (defaults_installed_.size() >= kMaxProjects) defaults_installed_.clear();
    defaults_installed_.insert({entity, project});
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<store::AlertRule> stored,
                          store_->ListAlertRules(entity, project));
  std::vector<RuleSpec> specs;
  for (const store::AlertRule& r : stored) {
    Result<RuleSpec> spec = ParseStoredRule(r);
    if (!spec.ok()) {  // checked when stored; a rule edited by hand is skipped
      std::fprintf(stderr, "cohort: alert rule %lld of %s/%s skipped: %s\n", (long long)r.id,
                   entity.c_str(), project.c_str(), spec.status().ToString().c_str());
      continue;
    }
    specs.push_back(std::move(spec).value());
  }
  auto rules = std::make_shared<const ProjectRules>(std::move(specs));
  MutexLock lock(&mu_);
  if (rules_.size() >= kMaxProjects) {  // those past their time first, else all
    std::erase_if(rules_, [&](const auto& e) { return now_ms - e.second.loaded_ms >= kRulesTtlMs; });
    if (rules_.size() >= kMaxProjects) rules_.clear();
  }
  rules_[{entity, project}] = CachedRules{rules, now_ms};
  return std::shared_ptr<const ProjectRules>(rules);
}

void AlertEngine::Invalidate(const std::string& entity, const std::string& project) {
  MutexLock lock(&mu_);
  rules_.erase({entity, project});
}

int64_t AlertEngine::errors() const {
  MutexLock lock(&mu_);
  return errors_;
}

int64_t AlertEngine::rate_limited() const {
  MutexLock lock(&mu_);
  return rate_limited_;
}

void AlertEngine::Failed(const char* what, const Status& s) {
  if (s.code() == StatusCode::kResourceExhausted) {
    MutexLock lock(&mu_);
    ++rate_limited_;
    return;
  }
  std::fprintf(stderr, "cohort: alerts: %s failed: %s\n", what, s.ToString().c_str());
  MutexLock lock(&mu_);
  ++errors_;
}

Status AlertEngine::EnsureLoaded(const store::RunRef& ref, const std::string& label,
                                 int64_t now_ms) {
  const std::string wk = WriterKey(ref, label);
  {
    MutexLock lock(&mu_);
    auto it = writers_.find(wk);
    if (it != writers_.end() && now_ms - it->second.loaded_ms < kRulesTtlMs) return Status::Ok();
  }
  // The writer's own open alerts (a run's newest 1000 for all its writers left older conditions
  // of a writer out: they looked clean and never resolved).
  store::AlertQuery q{.entity = ref.entity,
                      .project = ref.project,
                      .state = "open",
                      .run_id = ref.run_id,
                      .writer_label = label,
                      .limit = 1000};
  COHORT_ASSIGN_OR_RETURN(std::vector<store::AlertRecord> open, store_->ListAlerts(q));
  WriterConditions wc;
  wc.loaded_ms = now_ms;
  for (const store::AlertRecord& a : open) {
    if (a.writer_label == label) wc.by_key[a.condition_key] = Condition{true, a.last_seen_ms};
  }
  MutexLock lock(&mu_);
  if (writers_.size() >= kMaxWriters) writers_.clear();
  writers_[wk] = std::move(wc);  // what the store says now (another server may have changed it)
  return Status::Ok();
}

void AlertEngine::Apply(const store::RunRef& ref, const std::string& label, const Verdict& v,
                        int64_t now_ms) {
  const std::string wk = WriterKey(ref, label);
  const std::string cond = RuleConditionKey(*v.rule, v.key);
  bool raise = false, resolve = false;
  {
    MutexLock lock(&mu_);
    Condition& c = writers_[wk].by_key[cond];
    if (v.bad && (!c.open || now_ms - c.last_raised_ms >= kBumpIntervalMs)) raise = true;
    if (v.clear_at_end && (c.open || raise)) resolve = true;
  }
  if (raise) {
    const bool threshold = v.rule->kind == RuleKind::kMetricThreshold;
    bj::object evidence{{"key", v.key},
                        {"step", v.step >= 0 ? bj::value(v.step) : bj::value(nullptr)},
                        {"value", JsonNumber(v.value)}};
    std::string title;
    if (threshold) {
      evidence["op"] = ThresholdOpName(v.rule->op);
      evidence["threshold"] = v.rule->value;
      if (v.rule->after_step) evidence["after_step"] = *v.rule->after_step;
      title = v.key + " " + ThresholdOpName(v.rule->op) + " " + TitleNumber(v.rule->value);
    } else {
      title = v.key + " is " + TitleNumber(v.value);
    }
    std::string where = label.empty() ? "" : " (writer " + label + ")";
    std::string text = v.rule->name + ": " + title + " at step " +
                       (v.step >= 0 ? std::to_string(v.step) : std::string("?")) + where;
    auto raised = store_->RaiseAlert(RuleRaise(*v.rule, ref, label, v.key, std::move(title),
                                               std::move(text), bj::serialize(evidence),
                                               now_ms));
    if (!raised.ok() && raised.status().code() == StatusCode::kFailedPrecondition) {
      Invalidate(ref.entity, ref.project);  // the rule went (another server): read them again
      return;
    }
    if (!raised.ok() && raised.status().code() == StatusCode::kNotFound) return;  // run deleted
    if (!raised.ok()) {
      Failed("raising an alert", raised.status());
      return;  // not open: a later batch tries again
    }
    MutexLock lock(&mu_);
    writers_[wk].by_key[cond] = Condition{true, now_ms};
  }
  if (resolve) {
    auto resolved = store_->ResolveAlert(ref.entity, ref.project, ref.run_id, label, cond, now_ms);
    if (!resolved.ok()) return Failed("resolving an alert", resolved.status());
    MutexLock lock(&mu_);
    writers_[wk].by_key[cond].open = false;
  }
}

void AlertEngine::OnBatch(const store::RunRef& ref, const std::string& label,
                          const store::IngestBatch& batch, const store::IngestResult& result,
                          int64_t now_ms) {
  if (result.duplicate || batch.columns.empty()) return;
  auto rules = Rules(ref.entity, ref.project, now_ms);
  if (!rules.ok()) return Failed("reading alert rules", rules.status());
  std::vector<int64_t> steps;  // of history rows, computed on first need
  if ((*rules)->has_progress_rules()) {
    steps = RowSteps(batch, result.next_step);
    int64_t max_step = -1;
    for (int64_t st : steps) max_step = std::max(max_step, st);
    std::vector<std::string> watched;  // keys of stale_metric rules
    for (const store::KeyColumn& col : batch.columns) {
      for (const RuleSpec& r : (*rules)->rules()) {
        if (r.enabled && r.kind == RuleKind::kStaleMetric && GlobMatch(r.key, col.key)) {
          watched.push_back(col.key);
          break;
        }
      }
    }
    if ((*rules)->has_straggler_rules() || (*rules)->has_gpu_rules()) {
      const RankSamples samples = RankSamplesOf(**rules, batch, steps);
      tracker_.OnBatch(ref, label, max_step, watched, now_ms, &samples);
    } else {
      tracker_.OnBatch(ref, label, max_step, watched, now_ms);
    }
  }
  if (!(*rules)->has_metric_rules()) return;
  std::vector<Verdict> verdicts;
  for (const store::KeyColumn& col : batch.columns) {
    const std::vector<int> matched = (*rules)->MetricRulesFor(col.key);
    if (matched.empty()) continue;
    if (!col.system && steps.empty()) steps = RowSteps(batch, result.next_step);
    auto step_of = [&](size_t i) -> int64_t {
      if (col.system) return -1;
      const uint32_t row = col.rows[i];
      return row < steps.size() ? steps[row] : -1;
    };
    if (col.values.empty()) continue;
    const ColumnSummary sum = Summarize(col.values);
    bool steps_known = false;  // the column's step range, computed once if a rule asks
    int64_t min_step = 0, max_step = 0;
    for (int idx : matched) {
      const RuleSpec& rule = (*rules)->rules()[size_t(idx)];
      Verdict v{.rule = &rule, .key = col.key};
      if (rule.kind == RuleKind::kMetricNonfinite) {
        v.bad = sum.first_nonfinite < col.values.size();
        if (v.bad) {
          v.step = step_of(sum.first_nonfinite);
          v.value = col.values[sum.first_nonfinite];
        }
        v.clear_at_end = sum.last_finite;
        verdicts.push_back(std::move(v));
        continue;
      }
      if (sum.not_nan == 0) continue;  // NaN is the nonfinite rule's business
      bool every_row = !rule.after_step;
      if (rule.after_step) {
        if (!steps_known) {
          min_step = INT64_MAX;
          max_step = INT64_MIN;
          for (size_t i = 0; i < col.values.size(); ++i) {
            min_step = std::min(min_step, step_of(i));
            max_step = std::max(max_step, step_of(i));
          }
          steps_known = true;
        }
        if (max_step < *rule.after_step) continue;        // no row the rule looks at
        every_row = min_step >= *rule.after_step;          // (-1: a step not known)
      }
      if (every_row) {
        // Decided by the column's extreme and last values; rows are read again only to name
        // the first bad one.
        const bool upward = rule.op == ThresholdOp::kGt || rule.op == ThresholdOp::kGe;
        v.bad = Crosses(rule.op, upward ? sum.max : sum.min, rule.value);
        v.clear_at_end = !Crosses(rule.op, sum.last_not_nan, rule.value);
        for (size_t i = 0; v.bad && i < col.values.size(); ++i) {
          const double x = col.values[i];
          if (!std::isnan(x) && Crosses(rule.op, x, rule.value)) {
            v.step = step_of(i);
            v.value = x;
            break;
          }
        }
        verdicts.push_back(std::move(v));
        continue;
      }
      // The column's steps straddle after_step: row by row.
      bool seen = false;  // a row the rule looks at
      for (size_t i = 0; i < col.values.size(); ++i) {
        const double x = col.values[i];
        if (std::isnan(x)) continue;
        const int64_t st = step_of(i);
        if (st < 0 || st < *rule.after_step) continue;
        const bool bad = Crosses(rule.op, x, rule.value);
        seen = true;
        if (bad && !v.bad) {
          v.bad = true;
          v.step = st;
          v.value = x;
        }
        v.clear_at_end = !bad;
      }
      if (seen) verdicts.push_back(std::move(v));
    }
  }
  if (verdicts.empty()) return;
  if (Status s = EnsureLoaded(ref, label, now_ms); !s.ok()) {
    return Failed("reading open alerts", s);
  }
  // The common case, every value fine and nothing open for the writer, needs no more work.
  const std::string wk = WriterKey(ref, label);
  bool any_open = false;
  {
    MutexLock lock(&mu_);
    auto w = writers_.find(wk);
    if (w != writers_.end()) {
      for (const auto& [cond, c] : w->second.by_key) any_open = any_open || c.open;
    }
  }
  for (const Verdict& v : verdicts) {
    bool act = v.bad;
    if (!act && any_open) {  // only a condition open now needs a store call
      MutexLock lock(&mu_);
      auto w = writers_.find(wk);
      if (w != writers_.end()) {
        auto c = w->second.by_key.find(RuleConditionKey(*v.rule, v.key));
        act = c != w->second.by_key.end() && c->second.open;
      }
    }
    if (act) Apply(ref, label, v, now_ms);
  }
}

void AlertEngine::OnHeartbeat(const store::RunRef& ref, const std::string& label, int64_t now_ms) {
  tracker_.OnHeartbeat(ref, label, now_ms);
}

bool AlertEngine::Raise(const store::AlertRaise& raise) {
  auto raised = store_->RaiseAlert(raise);
  if (!raised.ok() && raised.status().code() == StatusCode::kFailedPrecondition) {
    Invalidate(raise.entity, raise.project);  // its rule went (another server)
    return false;
  }
  if (!raised.ok() && raised.status().code() == StatusCode::kNotFound) return false;  // run gone
  if (!raised.ok()) {
    Failed("raising an alert", raised.status());
    return false;
  }
  return true;
}

namespace {

bj::array WritersJson(const std::vector<WriterProgressView>& writers) {
  bj::array out;
  for (const WriterProgressView& w : writers) {
    out.push_back(bj::object{{"writer", w.label},
                             {"last_step", w.last_step},
                             {"last_step_ms", w.last_advance_ms},
                             {"last_heartbeat_ms", w.last_seen_ms}});
  }
  return out;
}

}  // namespace

void AlertEngine::Tick(int64_t now_ms) {
  HandleWriterEnds(now_ms);
  AdoptOpenTickAlerts(now_ms);
  // The rules of every tracked project, read before the tracker is asked (its callbacks run
  // under its lock and must not reach the store).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const ProjectRules>> rules;
  // Projects whose rules could not be read: what is open for them stays open this time.
  std::set<std::pair<std::string, std::string>> unknown;
  for (auto& [entity, project] : tracker_.Projects()) {
    auto r = Rules(entity, project, now_ms);
    if (!r.ok()) {
      Failed("reading alert rules", r.status());
      unknown.emplace(entity, project);
      continue;
    }
    if ((*r)->has_progress_rules()) rules.emplace(std::make_pair(entity, project), *r);
  }
  // What should be open now: (writer key, condition key) -> its raise.
  Wanted want;
  std::set<std::pair<std::string, std::string>> rank_flagged;
  for (const auto& entry : rules) {
    // Not a structured binding: lambdas below capture it (clang before 16 refuses those).
    const std::pair<std::string, std::string>& project = entry.first;
    const std::shared_ptr<const ProjectRules>& pr = entry.second;
    for (const RuleSpec& rule : pr->rules()) {
      if (!rule.enabled) continue;
      if (rule.kind == RuleKind::kHung) {
        const ProgressTracker::HungParams params{rule.factor, int64_t(rule.min_minutes * 60'000)};
        auto found = tracker_.FindHung(
            now_ms, [&](const store::RunRef& ref) -> std::optional<ProgressTracker::HungParams> {
              if (ref.entity != project.first || ref.project != project.second) return {};
              return params;
            });
        for (HungFinding& f : found) {
          const std::string who = f.label.empty() ? "run " + f.run.run_id : "writer " + f.label;
          bj::object evidence{{"stalled_ms", f.stalled_ms},
                              {"threshold_ms", f.threshold_ms},
                              {"step_time_ms", f.step_time_ms},
                              {"writers", WritersJson(f.writers)}};
          if (f.label.empty()) {
            bj::array suspects;
            for (const std::string& l : f.suspects) suspects.push_back(bj::value(l));
            evidence["suspects"] = std::move(suspects);
          }
          std::string text = rule.name + ": " + who + " made no step for " +
                             std::to_string(f.stalled_ms / 1000) + " s (the job's step time is " +
                             std::to_string(int64_t(f.step_time_ms)) + " ms)";
          if (!f.label.empty()) text += " while other writers advanced";
          if (!f.suspects.empty()) {
            text += "; behind the others:";
            for (const std::string& l : f.suspects) text += " " + l;
          }
          store::AlertRaise r = RuleRaise(rule, f.run, f.label, "", who + " hung",
                                          std::move(text), bj::serialize(evidence), now_ms);
          want[{WriterKey(f.run, f.label), r.condition_key}] = std::move(r);
        }
      } else if (rule.kind == RuleKind::kStaleMetric) {
        const int64_t limit = int64_t(rule.minutes * 60'000);
        auto found = tracker_.FindStale(
            now_ms,
            [&](const store::RunRef& ref, const std::string& key) -> std::optional<int64_t> {
              if (ref.entity != project.first || ref.project != project.second ||
                  !GlobMatch(rule.key, key)) {
                return {};
              }
              return limit;
            });
        for (StaleFinding& f : found) {
          bj::object evidence{
              {"key", f.key}, {"last_point_ms", f.last_point_ms}, {"minutes", rule.minutes}};
          store::AlertRaise r = RuleRaise(
              rule, f.run, f.label, f.key, f.key + " has no new point",
              rule.name + ": no point of " + f.key + " from writer " + f.label + " for " +
                  std::to_string((now_ms - f.last_point_ms) / 60'000) + " min",
              bj::serialize(evidence), now_ms);
          want[{WriterKey(f.run, f.label), r.condition_key}] = std::move(r);
        }
      } else if (rule.kind == RuleKind::kStraggler || rule.kind == RuleKind::kGpuUnderused) {
        FindRankAlerts(rule, project, now_ms, &want, &rank_flagged);
      }
    }
  }
  PruneRankSince(rank_flagged);
  std::vector<store::AlertRaise> to_raise, to_resolve;
  {
    MutexLock lock(&mu_);
    for (auto& [k, r] : want) {
      auto it = tick_open_.find(k);
      if (it == tick_open_.end() || now_ms - it->second.now_ms >= kBumpIntervalMs) {
        to_raise.push_back(r);
      }
    }
    for (const auto& [k, r] : tick_open_) {
      if (want.count(k) || unknown.count({r.entity, r.project})) continue;
      auto held = adopted_until_ms_.find(k);
      if (held != adopted_until_ms_.end() && now_ms < held->second) continue;
      to_resolve.push_back(r);
    }
  }
  for (const store::AlertRaise& r : to_raise) {
    if (!Raise(r)) continue;
    MutexLock lock(&mu_);
    const std::pair<std::string, std::string> k{
        WriterKey({r.entity, r.project, r.run_id}, r.writer_label), r.condition_key};
    tick_open_[k] = r;
    adopted_until_ms_.erase(k);  // found again: decided as any other from now on
  }
  for (const store::AlertRaise& r : to_resolve) {
    auto resolved = store_->ResolveAlert(r.entity, r.project, r.run_id, r.writer_label,
                                         r.condition_key, now_ms);
    if (!resolved.ok()) {
      Failed("resolving an alert", resolved.status());
      continue;
    }
    MutexLock lock(&mu_);
    const std::pair<std::string, std::string> k{
        WriterKey({r.entity, r.project, r.run_id}, r.writer_label), r.condition_key};
    tick_open_.erase(k);
    adopted_until_ms_.erase(k);
  }
}

}  // namespace cohort::alerts
