// AlertEngine: the end of writers (alert_engine.h HandleWriterEnds), from the store's record of
// ends not handled yet, and the tick rules' open alerts a process takes over at its first Tick
// (AdoptOpenTickAlerts).
#include <algorithm>
#include <cstdio>
#include <set>

#include "core/json.h"
#include "server/alerts/alert_engine.h"
#include "store/run_state.h"

namespace cohort::alerts {
namespace bj = boost::json;

namespace {

// Open alerts taken over at most (the oldest first).
constexpr int kMaxAdopted = 10'000;
// A taken-over alert is kept open for its rule's time window plus this, so that the rule, whose
// memory starts empty in a new process, has had the time to find it again.
constexpr int64_t kAdoptMarginMs = 120'000;

// The ids of the project's tick rules, enabled or not (a disabled one may have left alerts).
std::vector<int64_t> TickRuleIds(const ProjectRules& rules) {
  std::vector<int64_t> ids;
  for (const RuleSpec& r : rules.rules()) {
    if (IsTickRule(r.kind)) ids.push_back(r.id);
  }
  return ids;
}

// How long a taken-over alert of `rule` stays open unless found again.
int64_t AdoptedHoldMs(const RuleSpec& rule) {
  double minutes = 0;
  switch (rule.kind) {
    case RuleKind::kHung: minutes = rule.min_minutes; break;
    case RuleKind::kStraggler:
    case RuleKind::kGpuUnderused: minutes = rule.for_minutes; break;
    default: break;  // stale_metric: its key is watched from its last point at once
  }
  return int64_t(minutes * 60'000) + ProgressTracker::kAliveMs + kAdoptMarginMs;
}

}  // namespace

bool AlertEngine::RaiseWriterState(const ProjectRules& rules, const store::EndedWriter& w,
                                   int64_t now_ms) {
  const std::string state(store::RunStateName(w.state));
  bool ok = true;
  for (const RuleSpec& rule : rules.rules()) {
    if (!rule.enabled || rule.kind != RuleKind::kWriterState) continue;
    if (std::find(rule.states.begin(), rule.states.end(), state) == rule.states.end()) continue;
    bj::object evidence{{"state", state},
                        {"exit_code", w.exit_code ? bj::value(*w.exit_code) : bj::value(nullptr)},
                        {"last_heartbeat_ms", w.heartbeat_ms}};
    std::string text = rule.name + ": writer " + w.label + " of run " + w.run.run_id + " ended " +
                       state +
                       (w.exit_code ? " with exit code " + std::to_string(*w.exit_code) : "");
    if (w.state == store::RunState::kCrashed) {
      text += " (no heartbeat for " +
              std::to_string(std::max<int64_t>(0, w.finished_ms - w.heartbeat_ms) / 1000) + " s)";
    }
    store::AlertRaise r = RuleRaise(rule, w.run, w.label, "", "writer " + w.label + " " + state,
                                    std::move(text), bj::serialize(evidence), now_ms);
    r.counts_against_limit = false;
    ok = Raise(r) && ok;
  }
  return ok;
}

bool AlertEngine::RaiseRunCrashed(const ProjectRules& rules, const store::RunRef& ref,
                                  const std::vector<const store::EndedWriter*>& writers,
                                  int64_t now_ms) {
  bj::array listed;
  for (const store::EndedWriter* c : writers) {
    listed.push_back(bj::object{{"writer", c->label}, {"last_heartbeat_ms", c->heartbeat_ms}});
  }
  const std::string n = std::to_string(writers.size());
  bool ok = true;
  for (const RuleSpec& rule : rules.rules()) {
    if (!rule.enabled || rule.kind != RuleKind::kWriterState) continue;
    if (std::find(rule.states.begin(), rule.states.end(), "crashed") == rule.states.end()) continue;
    bj::object evidence{
        {"state", "crashed"}, {"count", int64_t(writers.size())}, {"writers", listed}};
    store::AlertRaise r = RuleRaise(rule, ref, "", "", n + " writers crashed",
                                    rule.name + ": " + n + " writers of run " + ref.run_id +
                                        " stopped heartbeating at once (" +
                                        writers.front()->label + ", ...)",
                                    bj::serialize(evidence), now_ms);
    r.counts_against_limit = false;
    ok = Raise(r) && ok;
  }
  return ok;
}

bool AlertEngine::ResolveEnded(const ProjectRules& rules, const store::RunRef& ref,
                               const std::string& label, int64_t now_ms) {
  bool ok = true;
  if (!label.empty()) {  // alerts raised by the training code last as long as the writer
    auto code = store_->ResolveWriterAlerts(ref.entity, ref.project, ref.run_id, label, "code",
                                            now_ms);
    if (!code.ok()) {
      Failed("resolving code alerts", code.status());
      ok = false;
    }
  }
  auto ticks = store_->ResolveRuleAlerts(ref.entity, ref.project, TickRuleIds(rules),
                                         ref.run_id, label, now_ms);
  if (!ticks.ok()) {
    Failed("resolving an ended writer's alerts", ticks.status());
    ok = false;
  }
  return ok;
}

void AlertEngine::Forget(const store::RunRef& ref, const std::string& label) {
  tracker_.Forget(ref, label);
  const std::string wk = WriterKey(ref, label);
  MutexLock lock(&mu_);
  writers_.erase(wk);
  auto it = tick_open_.lower_bound({wk, ""});
  while (it != tick_open_.end() && it->first.first == wk) {
    adopted_until_ms_.erase(it->first);
    it = tick_open_.erase(it);
  }
}

void AlertEngine::HandleWriterEnds(int64_t now_ms) {
  MutexLock one_pass(&ends_mu_);
  auto ended = store_->ListUnhandledWriterEnds(kMaxEndsPerPass);
  if (!ended.ok()) return Failed("reading ended writers", ended.status());
  // By run, each run's writers in the store's order (oldest end first).
  std::map<std::string, std::vector<const store::EndedWriter*>> by_run;
  for (const store::EndedWriter& e : *ended) by_run[WriterKey(e.run, "")].push_back(&e);
  for (const auto& entry : by_run) {
    const std::vector<const store::EndedWriter*>& writers = entry.second;
    const store::RunRef& run = writers.front()->run;
    auto rules = Rules(run.entity, run.project, now_ms);
    if (!rules.ok()) {
      Failed("reading alert rules", rules.status());
      continue;  // the ends stay unhandled: the next call tries again
    }
    // Many writers of one run lost at once (a node, the whole job): one run-level alert listing
    // them rather than one per writer.
    std::vector<const store::EndedWriter*> crashed;
    bool run_ended = false;
    for (const store::EndedWriter* e : writers) {
      if (e->state == store::RunState::kCrashed) crashed.push_back(e);
      run_ended = run_ended || e->run_ended;
    }
    const bool one_for_the_run = crashed.size() > kMaxWriterAlertsPerSweep;
    const bool run_raised = !one_for_the_run || RaiseRunCrashed(**rules, run, crashed, now_ms);
    bool run_resolved = true;
    if (run_ended) {
      run_resolved = ResolveEnded(**rules, run, "", now_ms);
      Forget(run, "");
    }
    for (const store::EndedWriter* e : writers) {
      bool ok = one_for_the_run && e->state == store::RunState::kCrashed
                    ? run_raised
                    : RaiseWriterState(**rules, *e, now_ms);
      ok = ResolveEnded(**rules, run, e->label, now_ms) && ok && run_resolved;
      Forget(run, e->label);
      if (!ok) continue;
      if (Status s = store_->MarkWriterEndHandled(run, e->label, e->finished_ms); !s.ok()) {
        Failed("marking a writer's end handled", s);
      }
    }
  }
}

void AlertEngine::OnWriterRevived(const store::RunRef& ref, const std::string& label,
                                  int64_t now_ms) {
  auto rules = Rules(ref.entity, ref.project, now_ms);
  if (!rules.ok()) return Failed("reading alert rules", rules.status());
  std::vector<int64_t> ids;
  for (const RuleSpec& r : (*rules)->rules()) {
    if (r.kind == RuleKind::kWriterState) ids.push_back(r.id);
  }
  if (ids.empty()) return;
  auto resolved =
      store_->ResolveRuleAlerts(ref.entity, ref.project, ids, ref.run_id, label, now_ms);
  if (!resolved.ok()) Failed("resolving a revived writer's crash alerts", resolved.status());
  ReviseRunCrashed(**rules, ref, now_ms);
}

bool AlertEngine::ReviseRunCrashed(const ProjectRules& rules, const store::RunRef& ref,
                                   int64_t now_ms) {
  std::set<int64_t> ids;
  for (const RuleSpec& r : rules.rules()) {
    if (r.kind == RuleKind::kWriterState) ids.insert(r.id);
  }
  auto open = store_->ListAlerts(store::AlertQuery{.entity = ref.entity,
                                                   .project = ref.project,
                                                   .state = "open",
                                                   .run_id = ref.run_id,
                                                   .writer_label = ""});
  if (!open.ok()) {
    Failed("reading a run's crash alerts", open.status());
    return false;
  }
  // The run-level crash alerts (RaiseRunCrashed) and the writers they list.
  std::vector<const store::AlertRecord*> run_level;
  std::set<std::string> listed;
  for (const store::AlertRecord& a : *open) {
    if (!a.rule_id || !ids.count(*a.rule_id)) continue;
    auto evidence = json::Parse(a.evidence_json);
    const bj::object* ev = evidence.ok() ? evidence->if_object() : nullptr;
    const bj::value* writers = ev ? ev->if_contains("writers") : nullptr;
    if (!writers || !writers->is_array()) continue;
    run_level.push_back(&a);
    for (const bj::value& w : writers->get_array()) {
      const bj::object* o = w.if_object();
      const bj::value* label = o ? o->if_contains("writer") : nullptr;
      if (label && label->is_string()) listed.emplace(label->get_string());
    }
  }
  if (run_level.empty()) return true;
  auto writers = store_->ListWriters(ref);
  if (!writers.ok()) {
    Failed("reading a run's writers", writers.status());
    return false;
  }
  std::vector<store::EndedWriter> still;
  for (const store::WriterRecord& w : *writers) {
    if (w.state != store::RunState::kCrashed || !listed.count(w.label)) continue;
    still.push_back(store::EndedWriter{.run = ref,
                                       .label = w.label,
                                       .state = w.state,
                                       .exit_code = w.exit_code,
                                       .heartbeat_ms = w.heartbeat_ms,
                                       .finished_ms = w.finished_ms.value_or(0)});
  }
  if (still.size() == listed.size()) return true;  // none of them came back
  std::vector<const store::EndedWriter*> crashed;
  for (const store::EndedWriter& w : still) crashed.push_back(&w);
  // Still many: the alert now lists those (its evidence's count and writers).
  if (crashed.size() > kMaxWriterAlertsPerSweep) {
    return RaiseRunCrashed(rules, ref, crashed, now_ms);
  }
  // Few enough to be alerted one by one, as HandleWriterEnds would have.
  bool ok = true;
  for (const store::AlertRecord* a : run_level) {
    auto resolved =
        store_->ResolveAlert(ref.entity, ref.project, ref.run_id, "", a->condition_key, now_ms);
    if (!resolved.ok()) {
      Failed("resolving a run's crash alert", resolved.status());
      return false;  // its writers' own alerts wait for it (the next revival tries again)
    }
  }
  for (const store::EndedWriter* w : crashed) ok = RaiseWriterState(rules, *w, now_ms) && ok;
  return ok;
}

void AlertEngine::OnRunEnded(const store::RunRef& ref, int64_t now_ms) {
  auto rules = Rules(ref.entity, ref.project, now_ms);
  if (!rules.ok()) return Failed("reading alert rules", rules.status());
  // As HandleWriterEnds at a run's end. Remembered until resolved: the next Tick resolves a run
  // alert of its own it no longer finds.
  if (ResolveEnded(**rules, ref, "", now_ms)) Forget(ref, "");
}

void AlertEngine::OnWriterRejoined(const store::RunRef& ref, const std::string& label,
                                   int64_t now_ms) {
  auto resolved =
      store_->ResolveWriterAlerts(ref.entity, ref.project, ref.run_id, label, "rule", now_ms);
  if (!resolved.ok()) Failed("resolving a rejoined writer's alerts", resolved.status());
  Forget(ref, label);
}

bool AlertEngine::AdoptOpenTickAlerts(int64_t now_ms) {
  {
    MutexLock lock(&mu_);
    if (adopted_) return true;
  }
  static const std::vector<std::string> kKinds = {
      RuleKindName(RuleKind::kHung), RuleKindName(RuleKind::kStaleMetric),
      RuleKindName(RuleKind::kStraggler), RuleKindName(RuleKind::kGpuUnderused)};
  auto open = store_->ListOpenRuleAlerts(kKinds, kMaxAdopted);
  if (!open.ok()) {
    Failed("reading the open alerts to take over", open.status());
    return false;
  }
  for (const store::OpenRuleAlert& o : *open) {
    const store::AlertRecord& a = o.alert;
    const store::RunRef ref{a.entity, a.project, a.run_id};
    std::shared_ptr<const ProjectRules> rules;
    const RuleSpec* rule = nullptr;
    if (o.live) {
      auto r = Rules(a.entity, a.project, now_ms);
      if (!r.ok()) {
        Failed("reading alert rules", r.status());
        return false;  // all again at the next tick (taking one over twice changes nothing)
      }
      rules = *r;
      for (const RuleSpec& s : rules->rules()) {
        if (a.rule_id && s.id == *a.rule_id && s.enabled) rule = &s;
      }
    }
    if (rule == nullptr) {  // its writer (run) ended, or its rule is gone
      auto resolved = store_->ResolveAlert(a.entity, a.project, a.run_id, a.writer_label,
                                           a.condition_key, now_ms);
      if (!resolved.ok()) {
        Failed("resolving an alert", resolved.status());
        return false;
      }
      continue;
    }
    if (rule->kind == RuleKind::kStaleMetric) {
      auto evidence = json::Parse(a.evidence_json);
      const bj::object* ev = evidence.ok() ? evidence->if_object() : nullptr;
      const bj::value* key = ev ? ev->if_contains("key") : nullptr;
      const bj::value* last = ev ? ev->if_contains("last_point_ms") : nullptr;
      if (key && key->is_string() && last && last->is_int64()) {
        tracker_.SeedKey(ref, a.writer_label, std::string(key->as_string()), last->as_int64());
      }
    }
    store::AlertRaise r = RuleRaise(*rule, ref, a.writer_label, "", a.title, a.text,
                                    a.evidence_json, a.last_seen_ms);
    r.condition_key = a.condition_key;  // with its key, for a per-key rule
    r.level = a.level;                  // as it was raised
    const std::pair<std::string, std::string> k{WriterKey(ref, a.writer_label), a.condition_key};
    MutexLock lock(&mu_);
    if (tick_open_.emplace(k, std::move(r)).second) {
      adopted_until_ms_[k] = now_ms + AdoptedHoldMs(*rule);
    }
  }
  MutexLock lock(&mu_);
  adopted_ = true;
  return true;
}

}  // namespace cohort::alerts
