#include "server/alerts/alert_rules.h"

#include <cmath>

namespace cohort::alerts {
namespace bj = boost::json;

namespace {

constexpr size_t kMaxKeyBytes = 512;
constexpr int64_t kMaxRankWindow = 1000;  // straggler: steps per writer kept in memory

// A metric key glob: not empty, no control characters, only '*' and '?' as wildcards.
void ReadKey(json::FieldReader& r, RuleSpec* out) {
  out->key = r.String("key", kMaxKeyBytes);
  if (!r.ok()) return;
  if (out->key.empty()) return r.Fail("key", "must not be empty");
  for (char c : out->key) {
    if (static_cast<unsigned char>(c) < 0x20) return r.Fail("key", "control characters");
    if (c == '[' || c == ']' || c == '{' || c == '}' || c == '\\') {
      return r.Fail("key", std::string("'") + c + "' is not key syntax: use '*' and '?' globs");
    }
  }
}

// The largest duration (minutes) or factor a rule takes: far beyond any job, and small enough that
// it converts to milliseconds without overflow (1e20 minutes would wrap to a negative limit and
// fire at once).
constexpr double kMaxRuleDuration = 1e6;

// A non-negative (or, with positive, > 0) finite number, at most kMaxRuleDuration.
std::optional<double> ReadDuration(json::FieldReader& r, std::string_view key, bool required,
                                   bool positive) {
  std::optional<double> v = r.OptDouble(key);
  if (!r.ok()) return std::nullopt;
  if (!v) {
    if (required) r.Fail(key, "required");
    return std::nullopt;
  }
  if (!std::isfinite(*v) || *v < 0 || (positive && *v == 0) || *v > kMaxRuleDuration) {
    r.Fail(key, positive ? "must be a number > 0 and <= 1000000"
                         : "must be a number >= 0 and <= 1000000");
    return std::nullopt;
  }
  return v;
}

}  // namespace

const char* RuleKindName(RuleKind kind) {
  switch (kind) {
    case RuleKind::kWriterState:
      return "writer_state";
    case RuleKind::kMetricNonfinite:
      return "metric_nonfinite";
    case RuleKind::kMetricThreshold:
      return "metric_threshold";
    case RuleKind::kStaleMetric:
      return "stale_metric";
    case RuleKind::kHung:
      return "hung";
    case RuleKind::kStraggler:
      return "straggler";
    case RuleKind::kGpuUnderused:
      return "gpu_underused";
  }
  return "?";
}

const char* ThresholdOpName(ThresholdOp op) {
  switch (op) {
    case ThresholdOp::kGt:
      return ">";
    case ThresholdOp::kGe:
      return ">=";
    case ThresholdOp::kLt:
      return "<";
    case ThresholdOp::kLe:
      return "<=";
  }
  return "?";
}

Status ParseRuleSpec(std::string_view kind, const bj::object& spec, RuleSpec* out) {
  json::FieldReader r(spec, "spec");
  if (kind == "writer_state") {
    out->kind = RuleKind::kWriterState;
    r.RejectUnknown({"states"});
    auto states = r.OptStringArray("states", 32);
    if (!r.ok()) return r.status();
    out->states = states.value_or(std::vector<std::string>{"crashed", "failed", "preempted"});
    if (out->states.empty()) return Status::InvalidArgument("spec.states: must not be empty");
    for (const std::string& s : out->states) {
      if (s != "crashed" && s != "failed" && s != "preempted" && s != "killed") {
        return Status::InvalidArgument("spec.states: '" + s +
                                       "' is not one of crashed, failed, preempted, killed");
      }
    }
  } else if (kind == "metric_nonfinite") {
    out->kind = RuleKind::kMetricNonfinite;
    r.RejectUnknown({"key"});
    ReadKey(r, out);
  } else if (kind == "metric_threshold") {
    out->kind = RuleKind::kMetricThreshold;
    r.RejectUnknown({"key", "op", "value", "after_step"});
    ReadKey(r, out);
    std::string op = r.String("op", 8);
    std::optional<double> value = r.OptDouble("value");
    std::optional<int64_t> after = r.OptInt("after_step");
    if (!r.ok()) return r.status();
    if (op == ">")
      out->op = ThresholdOp::kGt;
    else if (op == ">=")
      out->op = ThresholdOp::kGe;
    else if (op == "<")
      out->op = ThresholdOp::kLt;
    else if (op == "<=")
      out->op = ThresholdOp::kLe;
    else
      return Status::InvalidArgument("spec.op: expected >, >=, < or <=, got '" + op + "'");
    if (!value || !std::isfinite(*value)) {
      return Status::InvalidArgument("spec.value: a finite number is required");
    }
    out->value = *value;
    if (after && *after < 0) return Status::InvalidArgument("spec.after_step: must be >= 0");
    out->after_step = after;
  } else if (kind == "stale_metric") {
    out->kind = RuleKind::kStaleMetric;
    r.RejectUnknown({"key", "minutes"});
    ReadKey(r, out);
    out->minutes = ReadDuration(r, "minutes", true, true).value_or(0);
  } else if (kind == "hung") {
    out->kind = RuleKind::kHung;
    r.RejectUnknown({"factor", "min_minutes"});
    out->factor = ReadDuration(r, "factor", false, true).value_or(5);
    out->min_minutes = ReadDuration(r, "min_minutes", false, false).value_or(10);
    if (r.ok() && out->factor < 1) return Status::InvalidArgument("spec.factor: must be >= 1");
  } else if (kind == "straggler") {
    out->kind = RuleKind::kStraggler;
    r.RejectUnknown({"z", "ratio", "lag_ratio", "window", "min_writers", "desync", "for_minutes"});
    out->z = ReadDuration(r, "z", false, true);
    std::optional<double> ratio = ReadDuration(r, "ratio", false, true);
    out->lag_ratio = ReadDuration(r, "lag_ratio", false, true);
    std::optional<int64_t> window = r.OptInt("window");
    std::optional<int64_t> min_writers = r.OptInt("min_writers");
    out->desync = r.OptBool("desync").value_or(true);
    out->for_minutes = ReadDuration(r, "for_minutes", false, false).value_or(1);
    if (!r.ok()) return r.status();
    if (ratio && *ratio < 1) return Status::InvalidArgument("spec.ratio: must be >= 1");
    out->ratio = ratio.value_or(0);
    if (window && (*window < 2 || *window > kMaxRankWindow)) {
      return Status::InvalidArgument("spec.window: must be 2.." + std::to_string(kMaxRankWindow));
    }
    if (window) out->window = int(*window);
    if (min_writers && (*min_writers < 2 || *min_writers > 100'000)) {
      return Status::InvalidArgument("spec.min_writers: must be 2..100000");
    }
    out->min_writers = int(min_writers.value_or(3));
  } else if (kind == "gpu_underused") {
    out->kind = RuleKind::kGpuUnderused;
    r.RejectUnknown({"ratio", "min_util", "min_writers", "for_minutes"});
    out->ratio = ReadDuration(r, "ratio", false, true).value_or(0.5);
    out->min_util = ReadDuration(r, "min_util", false, false).value_or(50);
    std::optional<int64_t> min_writers = r.OptInt("min_writers");
    out->for_minutes = ReadDuration(r, "for_minutes", false, false).value_or(5);
    if (!r.ok()) return r.status();
    if (out->ratio >= 1) return Status::InvalidArgument("spec.ratio: must be < 1");
    if (out->min_util > 100) return Status::InvalidArgument("spec.min_util: must be <= 100");
    if (min_writers && (*min_writers < 2 || *min_writers > 100'000)) {
      return Status::InvalidArgument("spec.min_writers: must be 2..100000");
    }
    out->min_writers = int(min_writers.value_or(2));
  } else {
    return Status::InvalidArgument("kind: unknown rule kind '" + std::string(kind) +
                                   "' (writer_state, metric_nonfinite, metric_threshold, "
                                   "stale_metric, hung, straggler, gpu_underused)");
  }
  return r.status();
}

Result<RuleSpec> ParseStoredRule(const store::AlertRule& rule) {
  COHORT_ASSIGN_OR_RETURN(bj::value spec, json::Parse(rule.spec_json));
  if (!spec.is_object()) return Status::InvalidArgument("spec: expected a JSON object");
  RuleSpec out;
  out.id = rule.id;
  out.name = rule.name;
  out.level = rule.level;
  out.enabled = rule.enabled;
  COHORT_RETURN_IF_ERROR(ParseRuleSpec(rule.kind, spec.as_object(), &out));
  return out;
}

std::vector<store::AlertRule> DefaultRules() {
  return {
      store::AlertRule{.name = "writer crashed, failed or preempted",
                       .kind = "writer_state",
                       .spec_json = R"({"states":["crashed","failed","preempted"]})",
                       .level = "ERROR",
                       .builtin = true},
      store::AlertRule{.name = "NaN or Inf in a metric",
                       .kind = "metric_nonfinite",
                       .spec_json = R"({"key":"*"})",
                       .level = "WARN",
                       .builtin = true},
  };
}

bool GlobMatch(std::string_view glob, std::string_view s) {
  // Iterative matching with one backtrack point (the last '*').
  size_t g = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (g < glob.size() && (glob[g] == '?' || glob[g] == s[i])) {
      ++g;
      ++i;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      mark = i;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

bool Crosses(ThresholdOp op, double v, double threshold) {
  switch (op) {
    case ThresholdOp::kGt:
      return v > threshold;
    case ThresholdOp::kGe:
      return v >= threshold;
    case ThresholdOp::kLt:
      return v < threshold;
    case ThresholdOp::kLe:
      return v <= threshold;
  }
  return false;
}

}  // namespace cohort::alerts
