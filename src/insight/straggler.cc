#include "insight/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace cohort::insight {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + ptrdiff_t(mid));
  return lower + (upper - lower) / 2;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void EnvDouble(const char* name, double* out) {
  const char* s = std::getenv(name);
  if (!s || !*s) return;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end && *end == '\0' && std::isfinite(v) && v > 0) *out = v;
}

// The member's clock points sorted by step, one per step (the earliest time of a step).
std::vector<series::Point> SortedClock(const std::vector<series::Point>& clock) {
  std::vector<series::Point> c = clock;
  std::sort(c.begin(), c.end(), [](const series::Point& a, const series::Point& b) {
    return a.step != b.step ? a.step < b.step : a.time_ms < b.time_ms;
  });
  c.erase(
      std::unique(c.begin(), c.end(),
                  [](const series::Point& a, const series::Point& b) { return a.step == b.step; }),
      c.end());
  return c;
}

// Median ms per step over the last `window` intervals of a sorted clock.
Signal TimestampStepTime(const std::vector<series::Point>& c, int window) {
  Signal s;
  std::vector<double> per_step;
  for (size_t i = 1; i < c.size(); ++i) {
    per_step.push_back(double(c[i].time_ms - c[i - 1].time_ms) / double(c[i].step - c[i - 1].step));
  }
  if (per_step.size() > size_t(window)) {
    per_step.erase(per_step.begin(), per_step.end() - window);
  }
  if (per_step.empty()) return s;
  s.present = true;
  s.n = int64_t(per_step.size());
  s.value = Median(std::move(per_step));
  s.source = "timestamps";
  return s;
}

struct Robust {
  double median = kNaN, scale = 1;
  int members = 0;
};

// Median and robust scale of the present values of `sig`, and each member's z and ratio.
Robust Score(std::vector<MemberVerdict>* v, Signal MemberVerdict::*sig, double floor) {
  std::vector<double> vals;
  for (const auto& m : *v) {
    if ((m.*sig).present && std::isfinite((m.*sig).value)) vals.push_back((m.*sig).value);
  }
  Robust r;
  r.members = int(vals.size());
  if (vals.size() < 2) return r;
  r.median = Median(vals);
  std::vector<double> devs;
  for (double x : vals) devs.push_back(std::fabs(x - r.median));
  r.scale = std::max({1.4826 * Median(devs), 0.01 * std::fabs(r.median), floor});
  for (auto& m : *v) {
    Signal& s = m.*sig;
    if (!s.present || !std::isfinite(s.value)) continue;
    s.z = (s.value - r.median) / r.scale;
    s.ratio = r.median != 0 ? s.value / r.median : kNaN;
  }
  return r;
}

}  // namespace

StragglerOptions StragglerOptionsFromEnv() {
  StragglerOptions o;
  EnvDouble("COHORT_STRAGGLER_Z", &o.z);
  EnvDouble("COHORT_STRAGGLER_RATIO", &o.ratio);
  EnvDouble("COHORT_STRAGGLER_LAG_RATIO", &o.lag_ratio);
  double window = o.window, desync = double(o.desync_steps);
  EnvDouble("COHORT_STRAGGLER_WINDOW", &window);
  EnvDouble("COHORT_DESYNC_STEPS", &desync);
  o.window = int(std::clamp(window, 2.0, 100000.0));
  o.desync_steps = int64_t(std::clamp(desync, 1.0, 1e15));
  return o;
}

StragglerReport DetectStragglers(const std::vector<MemberSignals>& members,
                                 const StragglerOptions& opt) {
  StragglerReport rep;
  rep.members.resize(members.size());
  const int window = std::max(opt.window, 2);

  // Clocks, explicit values and the step-time source.
  std::vector<std::vector<series::Point>> clocks(members.size());
  int with_explicit = 0, with_clock = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    clocks[i] = SortedClock(members[i].clock);
    if (!clocks[i].empty()) {
      ++with_clock;
      rep.members[i].last_step = clocks[i].back().step;
      rep.members[i].last_time = clocks[i].back().time_ms;
    }
    if (!members[i].step_time_s.empty()) ++with_explicit;
  }
  const bool use_explicit =
      with_explicit > 0 &&
      with_explicit >= std::min<int>(opt.min_members, std::max(with_clock, with_explicit));

  for (size_t i = 0; i < members.size(); ++i) {
    MemberVerdict& v = rep.members[i];
    const MemberSignals& m = members[i];
    if (use_explicit) {
      if (!m.step_time_s.empty()) {
        v.step_time.present = true;
        v.step_time.n = int64_t(m.step_time_s.size());
        v.step_time.value = Median(m.step_time_s) * 1000.0;
        v.step_time.source = "perf/step_time";
      }
    } else {
      v.step_time = TimestampStepTime(clocks[i], window);
    }
    if (m.gpu_util) {
      v.gpu_util.present = true;
      v.gpu_util.value = *m.gpu_util;
      v.gpu_util.n = 1;
    }
    if (!m.throughput.empty()) {
      v.throughput.present = true;
      v.throughput.n = int64_t(m.throughput.size());
      v.throughput.value = Median(m.throughput);
    }
  }

  // Lag: steps that every member with a clock logged, latest `window` of them.
  std::map<int64_t, std::vector<std::pair<size_t, int64_t>>> by_step;
  for (size_t i = 0; i < members.size(); ++i) {
    for (const series::Point& p : clocks[i]) by_step[p.step].push_back({i, p.time_ms});
  }
  std::vector<std::vector<double>> lags(members.size());
  int common = 0;
  if (with_clock >= 2) {
    for (auto it = by_step.rbegin(); it != by_step.rend() && common < window; ++it) {
      if (int(it->second.size()) != with_clock) continue;
      ++common;
      std::vector<double> times;
      for (const auto& [i, t] : it->second) times.push_back(double(t));
      const double med = Median(times);
      for (const auto& [i, t] : it->second) lags[i].push_back(double(t) - med);
    }
  }
  if (common >= 3) {
    for (size_t i = 0; i < members.size(); ++i) {
      if (lags[i].empty()) continue;
      rep.members[i].lag.present = true;
      rep.members[i].lag.n = int64_t(lags[i].size());
      rep.members[i].lag.value = Median(lags[i]);
    }
  }

  const Robust st = Score(&rep.members, &MemberVerdict::step_time, 1e-3);
  rep.median_step_time_ms = st.median;
  const double lag_floor = std::max(1.0, std::isfinite(st.median) ? 0.01 * st.median : 0.0);
  const Robust lag = Score(&rep.members, &MemberVerdict::lag, lag_floor);
  const Robust gpu = Score(&rep.members, &MemberVerdict::gpu_util, 1.0);
  const Robust tp = Score(&rep.members, &MemberVerdict::throughput, 1e-9);

  for (size_t i = 0; i < rep.members.size(); ++i) {
    MemberVerdict& v = rep.members[i];
    Signal& s = v.step_time;
    if (s.present && st.members >= opt.min_members && s.z >= opt.z && s.ratio >= opt.ratio) {
      s.flagged = true;
      v.reasons.push_back("step_time: " + Num(s.value) + " ms/step over the last " +
                          std::to_string(s.n) + " steps (" + s.source + "), " + Num(s.ratio) +
                          "x the median of " + std::to_string(st.members) + " members (" +
                          Num(st.median) + " ms), z " + Num(s.z));
    }
    Signal& l = v.lag;
    if (l.present) {
      // Lag compares with the step time, not with the (near zero) median lag.
      l.ratio = std::isfinite(st.median) && st.median > 0 ? l.value / st.median : kNaN;
      if (lag.members >= opt.min_members && l.z >= opt.z && l.ratio >= opt.lag_ratio) {
        l.flagged = true;
        v.reasons.push_back("lag: reaches each step " + Num(l.value) +
                            " ms after the median member (median over " + std::to_string(l.n) +
                            " common steps), " + Num(l.ratio) + " of the median step time (" +
                            Num(st.median) + " ms), z " + Num(l.z));
      }
    }
    Signal& g = v.gpu_util;
    if (g.present && gpu.members >= opt.min_members && g.z <= -opt.z &&
        g.value * opt.ratio <= gpu.median) {
      g.flagged = true;
      v.reasons.push_back("gpu_util: " + Num(g.value) + "% mean utilisation, the median of " +
                          std::to_string(gpu.members) + " members is " + Num(gpu.median) + "%, z " +
                          Num(g.z));
    }
    Signal& t = v.throughput;
    if (t.present && tp.members >= opt.min_members && t.z <= -opt.z &&
        t.value * opt.ratio <= tp.median) {
      t.flagged = true;
      v.reasons.push_back("throughput: " + Num(t.value) + "/s, the median of " +
                          std::to_string(tp.members) + " members is " + Num(tp.median) + "/s, z " +
                          Num(t.z));
    }
    v.flagged = !v.reasons.empty();
    if (v.flagged) rep.stragglers.push_back(int(i));
  }

  // Desynchronisation: the running members' latest steps (all members once none runs).
  bool any_running = false;
  for (size_t i = 0; i < members.size(); ++i) {
    any_running |= members[i].running && !clocks[i].empty();
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (clocks[i].empty() || (any_running && !members[i].running)) continue;
    DesyncVerdict& d = rep.desync;
    const int64_t step = rep.members[i].last_step;
    if (d.ahead < 0 || step > rep.members[size_t(d.ahead)].last_step) d.ahead = int(i);
    if (d.behind < 0 || step < rep.members[size_t(d.behind)].last_step) d.behind = int(i);
  }
  DesyncVerdict& d = rep.desync;
  if (d.ahead >= 0 && d.ahead != d.behind) {
    d.step_gap = rep.members[size_t(d.ahead)].last_step - rep.members[size_t(d.behind)].last_step;
    if (d.step_gap >= opt.desync_steps) {
      d.flagged = true;
      d.reason = "steps drift apart: member " + std::to_string(d.ahead) + " is at step " +
                 std::to_string(rep.members[size_t(d.ahead)].last_step) + ", member " +
                 std::to_string(d.behind) + " at step " +
                 std::to_string(rep.members[size_t(d.behind)].last_step) + " (gap " +
                 std::to_string(d.step_gap) + " >= " + std::to_string(opt.desync_steps) + ")";
    }
  } else {
    d.ahead = d.behind = -1;
  }
  return rep;
}

}  // namespace cohort::insight
