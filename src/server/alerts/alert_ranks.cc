// The rank rules of AlertEngine (alert_engine.h): `straggler` (the rank insight's straggler and
// desynchronisation verdicts, insight/straggler.h) and `gpu_underused` (one writer's GPUs far
// under the others of its run), evaluated at Tick over what OnBatch noted per writer in the
// progress tracker — never over stored series.
#include <algorithm>
#include <cmath>
#include <map>

#include "server/alerts/alert_engine.h"

namespace cohort::alerts {
namespace bj = boost::json;

namespace {

constexpr std::string_view kSystemGpuPrefix = "system/gpu.";

bj::value Num(double v) { return std::isfinite(v) ? bj::value(v) : bj::value(nullptr); }
// A signal's number, null when the member has no such signal.
bj::value Num(const insight::Signal& s, double v) {
  return s.present ? Num(v) : bj::value(nullptr);
}

// A percentage or a duration for a title: rounded to an integer.
std::string Round(double v) { return std::isfinite(v) ? std::to_string(std::llround(v)) : "?"; }

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m;
}

// A candidate alert: a writer flagged now, before for_minutes is applied.
struct Flag {
  store::RunRef run;
  std::string label, title, text;
  bj::object evidence;
};

std::vector<Flag> StragglerFlags(const RuleSpec& rule, const insight::StragglerOptions& defaults,
                                 const std::vector<RunRanks>& runs) {
  insight::StragglerOptions opt = defaults;
  if (rule.z) opt.z = *rule.z;
  if (rule.ratio > 0) opt.ratio = rule.ratio;
  if (rule.lag_ratio) opt.lag_ratio = *rule.lag_ratio;
  if (rule.window) opt.window = *rule.window;
  opt.min_members = rule.min_writers;
  std::vector<Flag> out;
  for (const RunRanks& run : runs) {
    if (run.writers.size() < size_t(rule.min_writers)) continue;
    std::vector<insight::MemberSignals> members;
    for (const WriterRanks& w : run.writers) {
      members.push_back(insight::MemberSignals{
          .clock = w.clock, .step_time_s = w.step_time_s, .gpu_util = w.gpu_util});
    }
    const insight::StragglerReport rep = insight::DetectStragglers(members, opt);
    std::vector<int> flagged = rep.stragglers;
    const bool desync = rule.desync && rep.desync.flagged && rep.desync.behind >= 0;
    if (desync && std::find(flagged.begin(), flagged.end(), rep.desync.behind) == flagged.end()) {
      flagged.push_back(rep.desync.behind);
    }
    for (int i : flagged) {
      const insight::MemberVerdict& v = rep.members[size_t(i)];
      std::vector<std::string> reasons = v.reasons;
      bj::value desync_json = nullptr;
      if (desync && i == rep.desync.behind) {
        reasons.push_back(rep.desync.reason);
        desync_json = bj::object{{"step_gap", rep.desync.step_gap},
                                 {"ahead", run.writers[size_t(rep.desync.ahead)].label},
                                 {"behind", run.writers[size_t(i)].label}};
      }
      bj::array reasons_json;
      std::string text = rule.name + ": writer " + run.writers[size_t(i)].label + " of run " +
                         run.run.run_id + " is ";
      text += v.flagged ? "a straggler" : "behind the others";
      for (size_t r = 0; r < reasons.size(); ++r) {
        reasons_json.push_back(bj::value(reasons[r]));
        text += (r == 0 ? ": " : "; ") + reasons[r];
      }
      bj::object evidence{{"step_time_ms", Num(v.step_time.value)},
                          {"step_time_source", v.step_time.source},
                          {"lag_ms", Num(v.lag.value)},
                          {"z", Num(v.step_time, v.step_time.z)},
                          {"ratio", Num(v.step_time, v.step_time.ratio)},
                          {"lag_z", Num(v.lag, v.lag.z)},
                          {"lag_ratio", Num(v.lag, v.lag.ratio)},
                          {"gpu_util", Num(v.gpu_util.value)},
                          {"median_step_time_ms", Num(rep.median_step_time_ms)},
                          {"last_step", v.last_step},
                          {"writers", int64_t(run.writers.size())},
                          {"thresholds", bj::object{{"z", opt.z},
                                                    {"ratio", opt.ratio},
                                                    {"lag_ratio", opt.lag_ratio},
                                                    {"window", opt.window},
                                                    {"desync_steps", opt.desync_steps},
                                                    {"min_writers", opt.min_members}}},
                          {"reasons", std::move(reasons_json)},
                          {"desync", std::move(desync_json)}};
      std::string title = "writer " + run.writers[size_t(i)].label;
      if (std::isfinite(v.step_time.value) && v.step_time.flagged) {
        title += " straggles: " + Round(v.step_time.value) + " ms per step (median " +
                 Round(rep.median_step_time_ms) + " ms)";
      } else if (v.flagged) {
        title += " straggles";
      } else {
        title += " is " + std::to_string(rep.desync.step_gap) + " steps behind";
      }
      out.push_back(Flag{run.run, run.writers[size_t(i)].label, std::move(title), std::move(text),
                         std::move(evidence)});
    }
  }
  return out;
}

std::vector<Flag> GpuFlags(const RuleSpec& rule, const std::vector<RunRanks>& runs) {
  std::vector<Flag> out;
  for (const RunRanks& run : runs) {
    std::vector<const WriterRanks*> with;
    for (const WriterRanks& w : run.writers) {
      if (w.gpu_util) with.push_back(&w);
    }
    if (with.size() < size_t(std::max(rule.min_writers, 2))) continue;
    for (const WriterRanks* w : with) {
      std::vector<double> others;
      for (const WriterRanks* o : with) {
        if (o != w) others.push_back(*o->gpu_util);
      }
      const double median = Median(std::move(others));
      if (!(median >= rule.min_util) || median <= 0 || *w->gpu_util > rule.ratio * median) {
        continue;
      }
      bj::object evidence{
          {"gpu_util", *w->gpu_util},       {"others_median", median},
          {"ratio", *w->gpu_util / median}, {"threshold_ratio", rule.ratio},
          {"min_util", rule.min_util},      {"writers", int64_t(with.size())},
          {"samples", w->gpu_samples},      {"window_ms", ProgressTracker::kGpuWindowMs}};
      std::string title = "writer " + w->label + " GPUs at " + Round(*w->gpu_util) + "% (others " +
                          Round(median) + "%)";
      std::string text = rule.name + ": the GPUs of writer " + w->label + " of run " +
                         run.run.run_id + " averaged " + Round(*w->gpu_util) +
                         "% utilisation over the last " +
                         std::to_string(ProgressTracker::kGpuWindowMs / 60'000) +
                         " min, the other writers' median " + Round(median) + "%";
      out.push_back(
          Flag{run.run, w->label, std::move(title), std::move(text), std::move(evidence)});
    }
  }
  return out;
}

}  // namespace

bool IsGpuUtilKey(std::string_view key) {
  if (key.substr(0, kSystemGpuPrefix.size()) != kSystemGpuPrefix) return false;
  const std::string_view rest = key.substr(kSystemGpuPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  for (size_t i = 0; i < dot; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return false;
  }
  return rest.substr(dot) == ".gpu";
}

RankSamples AlertEngine::RankSamplesOf(const ProjectRules& rules, const store::IngestBatch& batch,
                                       const std::vector<int64_t>& steps) const {
  RankSamples s;
  if (rules.has_straggler_rules()) {
    int window = 0;
    for (const RuleSpec& r : rules.rules()) {
      if (r.enabled && r.kind == RuleKind::kStraggler) {
        window = std::max(window, r.window.value_or(straggler_defaults_.window));
      }
    }
    s.keep = size_t(window) + 1;
    for (size_t i = 0; i < steps.size() && i < batch.history_time_ms.size(); ++i) {
      if (steps[i] >= 0) s.clock.push_back(series::Point{steps[i], batch.history_time_ms[i], 0});
    }
  }
  std::map<uint32_t, std::pair<double, int>> gpu;  // system row -> sum, count
  for (const store::KeyColumn& col : batch.columns) {
    if (!col.system && col.key == "perf/step_time" && rules.has_straggler_rules()) {
      for (double v : col.values) {
        if (std::isfinite(v) && v >= 0) s.step_time_s.push_back(v);
      }
    } else if (col.system && IsGpuUtilKey(col.key)) {
      for (size_t i = 0; i < col.values.size() && i < col.rows.size(); ++i) {
        if (!std::isfinite(col.values[i])) continue;
        auto& [sum, n] = gpu[col.rows[i]];
        sum += col.values[i];
        ++n;
      }
    }
  }
  for (const auto& [row, sum_n] : gpu) {
    if (row < batch.system_time_ms.size()) {
      s.gpu.emplace_back(batch.system_time_ms[row], sum_n.first / sum_n.second);
    }
  }
  return s;
}

void AlertEngine::FindRankAlerts(const RuleSpec& rule,
                                 const std::pair<std::string, std::string>& project, int64_t now_ms,
                                 Wanted* want,
                                 std::set<std::pair<std::string, std::string>>* flagged) {
  const std::vector<RunRanks> runs = tracker_.RankSnapshot(now_ms, [&](const store::RunRef& r) {
    return r.entity == project.first && r.project == project.second;
  });
  std::vector<Flag> flags = rule.kind == RuleKind::kStraggler
                                ? StragglerFlags(rule, straggler_defaults_, runs)
                                : GpuFlags(rule, runs);
  const std::string cond = RuleConditionKey(rule, "");
  const int64_t hold_ms = int64_t(rule.for_minutes * 60'000);
  for (Flag& f : flags) {
    std::pair<std::string, std::string> k{WriterKey(f.run, f.label), cond};
    flagged->insert(k);
    int64_t since = now_ms;
    {
      MutexLock lock(&mu_);
      since = rank_since_.try_emplace(k, now_ms).first->second;
    }
    f.evidence["flagged_since_ms"] = since;
    if (now_ms - since < hold_ms) continue;
    (*want)[k] = RuleRaise(rule, f.run, f.label, "", std::move(f.title), std::move(f.text),
                           bj::serialize(f.evidence), now_ms);
  }
}

void AlertEngine::PruneRankSince(const std::set<std::pair<std::string, std::string>>& flagged) {
  MutexLock lock(&mu_);
  std::erase_if(rank_since_, [&](const auto& e) { return !flagged.count(e.first); });
}

}  // namespace cohort::alerts
