// Alert rules as the engine evaluates them (docs/api.md, "Alerts"): parsing and checking a
// rule's kind and spec (errors name the field: "kind", "spec.key", "spec.minutes"...), the
// defaults every project gets, and the key globs of metric rules.
//
// Threading: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "core/json.h"
#include "store/alert_types.h"

namespace cohort::alerts {

enum class RuleKind {
  kWriterState,
  kMetricNonfinite,
  kMetricThreshold,
  kStaleMetric,
  kHung,
  kStraggler,
  kGpuUnderused,
};
enum class ThresholdOp { kGt, kGe, kLt, kLe };

const char* RuleKindName(RuleKind kind);

// A checked rule.
struct RuleSpec {
  int64_t id = 0;
  std::string name;
  RuleKind kind = RuleKind::kMetricNonfinite;
  std::string level = "WARN";
  bool enabled = true;
  std::vector<std::string> states;     // writer_state: states that raise (crashed, failed, ...)
  std::string key;                     // metric rules: a glob ('*' any run, '?' one character)
  ThresholdOp op = ThresholdOp::kGt;   // metric_threshold
  double value = 0;                    // metric_threshold
  std::optional<int64_t> after_step;   // metric_threshold: only steps >= after_step
  double minutes = 0;                  // stale_metric
  double factor = 0, min_minutes = 0;  // hung
  // straggler: thresholds of the rank insight (insight/straggler.h); unset: the server's
  // defaults (StragglerOptionsFromEnv, as GET .../ranks/stragglers).
  std::optional<double> z, lag_ratio;
  std::optional<int> window;
  bool desync = true;      // straggler: also the writer behind a desynchronised job
  int min_writers = 3;     // straggler, gpu_underused: live writers with the signal needed
  double ratio = 0;        // straggler: slower by (unset: the server's default); gpu_underused: at
                           // most ratio x the median of the others
  double min_util = 0;     // gpu_underused: the others' median utilisation (percent) at least
  double for_minutes = 0;  // straggler, gpu_underused: flagged at every tick for this long
};

// Checks `spec` (a JSON object) for `kind` and fills `out`; kInvalidArgument naming the field
// ("kind: unknown rule kind 'x'", "spec.op: ...", "spec.minutes: must be > 0").
Status ParseRuleSpec(std::string_view kind, const boost::json::object& spec, RuleSpec* out);
// ParseRuleSpec of a stored rule (its spec_json parsed), with id, name, level and enabled.
Result<RuleSpec> ParseStoredRule(const store::AlertRule& rule);

// The rules every project gets (builtin): writer_state crashed/failed/preempted (ERROR) and
// metric_nonfinite on "*" (WARN).
std::vector<store::AlertRule> DefaultRules();

// Whether `glob` matches all of `s`: '*' matches any run of characters (also '/'), '?' one.
bool GlobMatch(std::string_view glob, std::string_view s);

// Whether `v` is on the bad side of the threshold (NaN never is).
bool Crosses(ThresholdOp op, double v, double threshold);
const char* ThresholdOpName(ThresholdOp op);

}  // namespace cohort::alerts
