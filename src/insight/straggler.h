// Straggler and desynchronisation detection across the members of a job (the writers of a shared
// run, or the runs of a group): robust statistics over each member's sliding window of steps
// (docs/api.md, "Rank aggregation" / "Stragglers" gives the definitions and defaults).
//
// Input is what the store already holds: the wall times of a reference key's points (each SDK row
// carries the time of the step's first log call), optional explicit perf/step_time and
// perf/throughput values, and the mean GPU utilisation per member. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "series/types.h"

namespace cohort::insight {

struct StragglerOptions {
  double z = 3.5;           // robust z-score a member must reach in the bad direction
  double ratio = 1.2;       // ... and be this factor worse than the members' median
  double lag_ratio = 0.25;  // lag flags need lag >= lag_ratio * median step time
  int window = 50;          // steps per member
  int64_t desync_steps = 10;
  int min_members = 3;  // members with a signal needed before it can flag anyone
};

// Defaults overridden by COHORT_STRAGGLER_Z, COHORT_STRAGGLER_RATIO, COHORT_STRAGGLER_LAG_RATIO,
// COHORT_STRAGGLER_WINDOW and COHORT_DESYNC_STEPS when set to valid positive numbers.
StragglerOptions StragglerOptionsFromEnv();

// What the detector knows about one member.
struct MemberSignals {
  // Points of the reference key over the member's window (its last `window` steps, plus the one
  // before so that the first step has a duration), in any order; step and time_ms are used.
  std::vector<series::Point> clock;
  std::vector<double> step_time_s;  // explicit perf/step_time values (seconds) in the window
  std::vector<double> throughput;   // explicit perf/throughput values in the window
  std::optional<double> gpu_util;   // mean GPU utilisation (percent) over the window's time span
  bool running = true;              // the writer has not ended
};

// One signal of one member. `value`: the member's window statistic (NaN: no data).
struct Signal {
  bool present = false;
  double value = std::numeric_limits<double>::quiet_NaN();
  int64_t n = 0;  // samples behind `value`
  double z = 0;   // robust z-score against the members' median (0 with < 2 members)
  double ratio = std::numeric_limits<double>::quiet_NaN();  // value / median (lag: / step time)
  bool flagged = false;
  std::string source;  // step_time: "timestamps" or "perf/step_time"
};

struct MemberVerdict {
  Signal step_time;   // ms per step, higher is worse
  Signal lag;         // ms behind the median member at the same step, higher is worse
  Signal gpu_util;    // percent, lower is worse
  Signal throughput;  // items/s, lower is worse
  int64_t last_step = -1;
  int64_t last_time = 0;
  bool flagged = false;
  std::vector<std::string> reasons;  // one sentence per flagged signal, with the evidence
};

struct DesyncVerdict {
  bool flagged = false;
  int64_t step_gap = 0;  // latest step of the member ahead minus that of the member behind
  int ahead = -1, behind = -1;
  std::string reason;
};

struct StragglerReport {
  std::vector<MemberVerdict> members;  // in input order
  std::vector<int> stragglers;         // indices of flagged members
  DesyncVerdict desync;
  double median_step_time_ms = std::numeric_limits<double>::quiet_NaN();
};

StragglerReport DetectStragglers(const std::vector<MemberSignals>& members,
                                 const StragglerOptions& opt);

}  // namespace cohort::insight
