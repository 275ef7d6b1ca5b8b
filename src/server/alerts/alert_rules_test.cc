#include "server/alerts/alert_rules.h"

#include <gtest/gtest.h>

namespace cohort::alerts {
namespace {

namespace bj = boost::json;

Status Check(std::string_view kind, std::string_view spec_json, RuleSpec* out = nullptr) {
  RuleSpec scratch;
  auto spec = json::Parse(spec_json);
  EXPECT_TRUE(spec.ok());
  return ParseRuleSpec(kind, spec->as_object(), out ? out : &scratch);
}

// The field a refusal names: the message's part before ": ".
std::string FieldOf(const Status& s) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  return s.message().substr(0, s.message().find(": "));
}

TEST(AlertRules, GoodSpecsParse) {
  RuleSpec r;
  ASSERT_TRUE(
      Check("metric_threshold", R"({"key":"eval/acc","op":"<","value":0.5,"after_step":1000})", &r)
          .ok());
  EXPECT_EQ(r.kind, RuleKind::kMetricThreshold);
  EXPECT_EQ(r.op, ThresholdOp::kLt);
  EXPECT_EQ(r.value, 0.5);
  EXPECT_EQ(r.after_step, 1000);
  ASSERT_TRUE(Check("writer_state", R"({})", &r).ok());
  EXPECT_EQ(r.states, (std::vector<std::string>{"crashed", "failed", "preempted"}));
  ASSERT_TRUE(Check("metric_nonfinite", R"({"key":"*"})", &r).ok());
  ASSERT_TRUE(Check("stale_metric", R"({"key":"loss","minutes":5})", &r).ok());
  EXPECT_EQ(r.minutes, 5);
  ASSERT_TRUE(Check("hung", R"({"factor":3,"min_minutes":0})", &r).ok());
  EXPECT_EQ(r.factor, 3);
  ASSERT_TRUE(Check("straggler", R"({})", &r).ok());
  EXPECT_EQ(r.kind, RuleKind::kStraggler);
  EXPECT_FALSE(r.z.has_value());  // the server's defaults, as GET .../ranks/stragglers
  EXPECT_EQ(r.ratio, 0);
  EXPECT_EQ(r.min_writers, 3);
  EXPECT_EQ(r.for_minutes, 1);
  EXPECT_TRUE(r.desync);
  ASSERT_TRUE(Check("straggler",
                    R"({"z":3,"ratio":1.5,"lag_ratio":0.5,"window":20,"min_writers":2,)"
                    R"("desync":false,"for_minutes":0})",
                    &r)
                  .ok());
  EXPECT_EQ(r.z, 3);
  EXPECT_EQ(r.ratio, 1.5);
  EXPECT_EQ(r.window, 20);
  EXPECT_EQ(r.min_writers, 2);
  EXPECT_FALSE(r.desync);
  EXPECT_EQ(r.for_minutes, 0);
  ASSERT_TRUE(Check("gpu_underused", R"({})", &r).ok());
  EXPECT_EQ(r.kind, RuleKind::kGpuUnderused);
  EXPECT_EQ(r.ratio, 0.5);
  EXPECT_EQ(r.min_util, 50);
  EXPECT_EQ(r.min_writers, 2);
  EXPECT_EQ(r.for_minutes, 5);
  EXPECT_STREQ(RuleKindName(RuleKind::kGpuUnderused), "gpu_underused");
}

TEST(AlertRules, BadSpecsNameTheField) {
  EXPECT_EQ(FieldOf(Check("nope", "{}")), "kind");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"key":"loss","op":"=","value":1})")), "spec.op");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"key":"","op":">","value":1})")), "spec.key");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"op":">","value":1})")), "spec.key");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"key":"a[0]","op":">","value":1})")), "spec.key");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"key":"loss","op":">"})")), "spec.value");
  EXPECT_EQ(FieldOf(Check("metric_threshold", R"({"key":"l","op":">","value":1,"after_step":-1})")),
            "spec.after_step");
  EXPECT_EQ(FieldOf(Check("stale_metric", R"({"key":"loss","minutes":-5})")), "spec.minutes");
  EXPECT_EQ(FieldOf(Check("stale_metric", R"({"key":"loss"})")), "spec.minutes");
  EXPECT_EQ(FieldOf(Check("hung", R"({"min_minutes":-1})")), "spec.min_minutes");
  EXPECT_EQ(FieldOf(Check("hung", R"({"factor":0})")), "spec.factor");
  // Durations that would overflow milliseconds (and fire at once) are refused.
  EXPECT_EQ(FieldOf(Check("stale_metric", R"({"key":"loss","minutes":1e20})")), "spec.minutes");
  EXPECT_EQ(FieldOf(Check("hung", R"({"min_minutes":1e20})")), "spec.min_minutes");
  EXPECT_EQ(FieldOf(Check("hung", R"({"factor":1e300})")), "spec.factor");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"for_minutes":2e6})")), "spec.for_minutes");
  EXPECT_TRUE(Check("stale_metric", R"({"key":"loss","minutes":1000000})").ok());
  EXPECT_EQ(FieldOf(Check("writer_state", R"({"states":["asleep"]})")), "spec.states");
  EXPECT_EQ(FieldOf(Check("writer_state", R"({"states":[]})")), "spec.states");
  EXPECT_EQ(FieldOf(Check("metric_nonfinite", R"({"key":"*","extra":1})")), "spec.extra");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"z":0})")), "spec.z");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"ratio":0.9})")), "spec.ratio");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"lag_ratio":-1})")), "spec.lag_ratio");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"window":1})")), "spec.window");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"window":5000})")), "spec.window");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"min_writers":1})")), "spec.min_writers");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"for_minutes":-1})")), "spec.for_minutes");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"desync":"yes"})")), "spec.desync");
  EXPECT_EQ(FieldOf(Check("straggler", R"({"key":"loss"})")), "spec.key");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"ratio":1})")), "spec.ratio");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"ratio":0})")), "spec.ratio");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"min_util":101})")), "spec.min_util");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"min_util":-1})")), "spec.min_util");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"for_minutes":"5"})")), "spec.for_minutes");
  EXPECT_EQ(FieldOf(Check("gpu_underused", R"({"min_writers":1})")), "spec.min_writers");
}

TEST(AlertRules, DefaultsAreValid) {
  std::vector<store::AlertRule> d = DefaultRules();
  ASSERT_EQ(d.size(), 2u);
  for (const auto& r : d) {
    EXPECT_TRUE(r.builtin);
    EXPECT_TRUE(ParseStoredRule(r).ok()) << r.name;
  }
  EXPECT_EQ(d[0].kind, "writer_state");
  EXPECT_EQ(d[0].level, "ERROR");
  EXPECT_EQ(d[1].kind, "metric_nonfinite");
}

TEST(AlertRules, GlobMatch) {
  EXPECT_TRUE(GlobMatch("*", "loss"));
  EXPECT_TRUE(GlobMatch("*", "system/gpu.0.temp"));
  EXPECT_TRUE(GlobMatch("loss", "loss"));
  EXPECT_FALSE(GlobMatch("loss", "loss2"));
  EXPECT_TRUE(GlobMatch("eval/*", "eval/acc"));
  EXPECT_FALSE(GlobMatch("eval/*", "train/acc"));
  EXPECT_TRUE(GlobMatch("*/acc", "eval/acc"));
  EXPECT_TRUE(GlobMatch("l?ss", "loss"));
  EXPECT_TRUE(GlobMatch("a*b*c", "a-x-b-y-c"));
  EXPECT_FALSE(GlobMatch("a*b*c", "a-x-b-y"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "x"));
}

TEST(AlertRules, Crosses) {
  EXPECT_TRUE(Crosses(ThresholdOp::kGt, 11, 10));
  EXPECT_FALSE(Crosses(ThresholdOp::kGt, 10, 10));
  EXPECT_TRUE(Crosses(ThresholdOp::kGe, 10, 10));
  EXPECT_TRUE(Crosses(ThresholdOp::kLt, 0.4, 0.5));
  EXPECT_TRUE(Crosses(ThresholdOp::kLe, 0.5, 0.5));
  EXPECT_FALSE(Crosses(ThresholdOp::kGt, std::nan(""), 10));
}

}  // namespace
}  // namespace cohort::alerts
