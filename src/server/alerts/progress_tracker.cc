#include "server/alerts/progress_tracker.h"

#include <algorithm>

namespace cohort::alerts {

namespace {
constexpr double kSmoothing = 0.3;  // weight of the newest time per step
}  // namespace

std::string ProgressTracker::RunKey(const store::RunRef& ref) {
  return ref.entity + '\x1f' + ref.project + '\x1f' + ref.run_id;
}

void ProgressTracker::OnBatch(const store::RunRef& ref, const std::string& label, int64_t max_step,
                              const std::vector<std::string>& keys, int64_t now_ms,
                              const RankSamples* samples) {
  MutexLock lock(&mu_);
  Run& run = runs_[RunKey(ref)];
  if (run.writers.empty()) run.ref = ref;
  auto [it, added] = run.writers.try_emplace(label);
  if (added && ++writer_count_ > kMaxWriters) {  // forget everything rather than grow
    runs_.clear();
    writer_count_ = 0;
    return;
  }
  Writer& w = it->second;
  w.last_seen_ms = std::max(w.last_seen_ms, now_ms);
  if (max_step > w.last_step) {
    if (w.last_step >= 0 && w.last_advance_ms > 0 && now_ms > w.last_advance_ms) {
      const double per_step = double(now_ms - w.last_advance_ms) / double(max_step - w.last_step);
      w.step_ms = w.step_ms == 0 ? per_step : kSmoothing * per_step + (1 - kSmoothing) * w.step_ms;
    }
    w.last_step = max_step;
    w.last_advance_ms = now_ms;
  }
  for (const std::string& k : keys) w.key_last_ms[k] = now_ms;
  if (samples == nullptr) return;
  for (const series::Point& p : samples->clock) w.clock.push_back(p);
  while (w.clock.size() > samples->keep) w.clock.pop_front();
  for (double v : samples->step_time_s) w.step_time_s.push_back(v);
  while (w.step_time_s.size() > samples->keep) w.step_time_s.pop_front();
  for (const auto& g : samples->gpu) w.gpu.push_back(g);
  if (!w.gpu.empty()) {
    int64_t newest = 0;
    for (const auto& g : w.gpu) newest = std::max(newest, g.first);
    std::erase_if(w.gpu, [&](const auto& g) { return g.first < newest - kGpuWindowMs; });
  }
}

std::vector<RunRanks> ProgressTracker::RankSnapshot(
    int64_t now_ms, const std::function<bool(const store::RunRef&)>& want) const {
  std::vector<RunRanks> out;
  MutexLock lock(&mu_);
  for (const auto& [key, run] : runs_) {
    if (!want(run.ref)) continue;
    RunRanks rr{.run = run.ref};
    for (const auto& [label, w] : run.writers) {
      if (now_ms - w.last_seen_ms > kAliveMs) continue;
      WriterRanks wr{.label = label,
                     .clock = {w.clock.begin(), w.clock.end()},
                     .step_time_s = {w.step_time_s.begin(), w.step_time_s.end()}};
      if (!w.gpu.empty()) {
        double sum = 0;
        for (const auto& g : w.gpu) sum += g.second;
        wr.gpu_util = sum / double(w.gpu.size());
        wr.gpu_samples = int64_t(w.gpu.size());
      }
      rr.writers.push_back(std::move(wr));
    }
    if (!rr.writers.empty()) out.push_back(std::move(rr));
  }
  return out;
}

void ProgressTracker::OnHeartbeat(const store::RunRef& ref, const std::string& label,
                                  int64_t now_ms) {
  MutexLock lock(&mu_);
  auto run = runs_.find(RunKey(ref));
  if (run == runs_.end()) return;  // a writer that never sent a batch has no progress to watch
  auto w = run->second.writers.find(label);
  if (w != run->second.writers.end())
    w->second.last_seen_ms = std::max(w->second.last_seen_ms, now_ms);
}

void ProgressTracker::Forget(const store::RunRef& ref, const std::string& label) {
  MutexLock lock(&mu_);
  auto run = runs_.find(RunKey(ref));
  if (run == runs_.end()) return;
  writer_count_ -= run->second.writers.erase(label);
  if (run->second.writers.empty()) runs_.erase(run);
}

void ProgressTracker::SeedKey(const store::RunRef& ref, const std::string& label,
                              const std::string& key, int64_t last_point_ms) {
  MutexLock lock(&mu_);
  Run& run = runs_[RunKey(ref)];
  if (run.writers.empty()) run.ref = ref;
  auto [it, added] = run.writers.try_emplace(label);
  if (added && ++writer_count_ > kMaxWriters) {  // as OnBatch
    runs_.clear();
    writer_count_ = 0;
    return;
  }
  it->second.key_last_ms.try_emplace(key, last_point_ms);
}

std::vector<std::pair<std::string, std::string>> ProgressTracker::Projects() const {
  std::vector<std::pair<std::string, std::string>> out;
  MutexLock lock(&mu_);
  for (const auto& [key, run] : runs_) out.emplace_back(run.ref.entity, run.ref.project);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t ProgressTracker::writers() const {
  MutexLock lock(&mu_);
  return writer_count_;
}

std::vector<HungFinding> ProgressTracker::FindHung(
    int64_t now_ms,
    const std::function<std::optional<HungParams>(const store::RunRef&)>& params) const {
  std::vector<HungFinding> out;
  MutexLock lock(&mu_);
  for (const auto& [key, run] : runs_) {
    std::vector<double> step_times;
    std::vector<std::pair<const std::string*, const Writer*>> live;
    for (const auto& [label, w] : run.writers) {
      if (w.last_step < 0 || now_ms - w.last_seen_ms > kAliveMs) continue;
      live.emplace_back(&label, &w);
      if (w.step_ms > 0) step_times.push_back(w.step_ms);
    }
    if (live.empty() || step_times.empty()) continue;  // no step time learnt yet
    std::optional<HungParams> p = params(run.ref);
    if (!p) continue;
    std::nth_element(step_times.begin(), step_times.begin() + step_times.size() / 2,
                     step_times.end());
    const double step_time = step_times[step_times.size() / 2];
    const int64_t threshold = std::max(int64_t(p->factor * step_time), p->min_ms);
    auto view = [](const std::string& label, const Writer& w) {
      return WriterProgressView{label, w.last_step, w.last_advance_ms, w.last_seen_ms};
    };
    int64_t newest_advance = 0, max_step = -1, min_step = INT64_MAX;
    bool all_stalled = true;
    for (const auto& [label, w] : live) {
      newest_advance = std::max(newest_advance, w->last_advance_ms);
      max_step = std::max(max_step, w->last_step);
      min_step = std::min(min_step, w->last_step);
      all_stalled = all_stalled && now_ms - w->last_advance_ms > threshold;
    }
    if (all_stalled) {
      HungFinding f{.run = run.ref,
                    .stalled_ms = now_ms - newest_advance,
                    .threshold_ms = threshold,
                    .step_time_ms = step_time};
      std::vector<HungFinding> behind;
      for (const auto& [label, w] : live) {
        f.writers.push_back(view(*label, *w));
        if (min_step < max_step && w->last_step == min_step) {
          f.suspects.push_back(*label);
          // The writer behind is hung on its own too: its alert (opened while the others still
          // advanced) stays open until it advances, not resolved when the run's opens.
          behind.push_back(HungFinding{.run = run.ref,
                                       .label = *label,
                                       .stalled_ms = now_ms - w->last_advance_ms,
                                       .threshold_ms = threshold,
                                       .step_time_ms = step_time,
                                       .writers = {view(*label, *w)}});
        }
      }
      out.push_back(std::move(f));
      for (HungFinding& b : behind) out.push_back(std::move(b));
      continue;
    }
    for (const auto& [label, w] : live) {
      const int64_t stalled = now_ms - w->last_advance_ms;
      // A writer at the highest step is waiting for the others (in a collective), not hung,
      // even when another reached that step a moment after it did.
      if (stalled <= threshold || w->last_advance_ms >= newest_advance) continue;
      if (w->last_step >= max_step) continue;
      out.push_back(HungFinding{.run = run.ref,
                                .label = *label,
                                .stalled_ms = stalled,
                                .threshold_ms = threshold,
                                .step_time_ms = step_time,
                                .writers = {view(*label, *w)}});
    }
  }
  return out;
}

std::vector<StaleFinding> ProgressTracker::FindStale(
    int64_t now_ms,
    const std::function<std::optional<int64_t>(const store::RunRef&, const std::string&)>& watch)
    const {
  std::vector<StaleFinding> out;
  MutexLock lock(&mu_);
  for (const auto& [key, run] : runs_) {
    for (const auto& [label, w] : run.writers) {
      if (now_ms - w.last_seen_ms > kAliveMs) continue;
      for (const auto& [k, last_ms] : w.key_last_ms) {
        std::optional<int64_t> limit = watch(run.ref, k);
        if (limit && now_ms - last_ms > *limit) {
          out.push_back(StaleFinding{run.ref, label, k, last_ms});
        }
      }
    }
  }
  return out;
}

}  // namespace cohort::alerts
