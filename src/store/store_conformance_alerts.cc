// Conformance cases for alerts (AlertStore): one open alert per condition and writer (a repeat
// bumps it), resolve and re-open with their events in order, acknowledgement, filters, the rate
// limit per project, rules CRUD and the project's defaults created once.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

AlertRaise Raise(const std::string& run, const std::string& label, const std::string& key,
                 int64_t now = kT0) {
  return AlertRaise{.entity = "acme",
                    .project = "vision",
                    .run_id = run,
                    .writer_label = label,
                    .rule_id = std::nullopt,
                    .source = "rule",
                    .condition_key = key,
                    .level = "WARN",
                    .title = "t:" + key,
                    .text = "some text",
                    .evidence_json = R"({"n":1})",
                    .now_ms = now};
}

AlertRule Rule(const std::string& name, const std::string& kind = "metric_nonfinite") {
  return AlertRule{.entity = "acme",
                   .project = "vision",
                   .name = name,
                   .kind = kind,
                   .spec_json = R"({"key":"*"})",
                   .level = "WARN",
                   .created_ms = kT0,
                   .updated_ms = kT0};
}

}  // namespace

TEST_P(StoreConformanceTest, AlertOpensOnceAndRepeatsBumpIt) {
  MakeRun("r1");
  MakeRun("r2");
  COHORT_ASSERT_OK_AND_ASSIGN(auto first, store().RaiseAlert(Raise("r1", "rank0", "code:x")));
  EXPECT_TRUE(first.second);
  EXPECT_EQ(first.first.state, "open");
  EXPECT_EQ(first.first.count, 1);
  EXPECT_EQ(first.first.run_id, "r1");
  EXPECT_EQ(first.first.writer_label, "rank0");
  EXPECT_EQ(first.first.source, "rule");
  EXPECT_EQ(first.first.title, "t:code:x");
  EXPECT_FALSE(first.first.rule_id.has_value());
  EXPECT_FALSE(first.first.resolved_ms.has_value());

  AlertRaise again = Raise("r1", "rank0", "code:x", kT0 + 500);
  again.evidence_json = R"({"n":2})";
  again.title = "t2";  // the condition as it stands now ("2 writers crashed", was 3)
  again.text = "newer text";
  COHORT_ASSERT_OK_AND_ASSIGN(auto second, store().RaiseAlert(again));
  EXPECT_FALSE(second.second);
  EXPECT_EQ(second.first.id, first.first.id);
  EXPECT_EQ(second.first.count, 2);
  EXPECT_EQ(second.first.last_seen_ms, kT0 + 500);
  EXPECT_EQ(second.first.opened_ms, kT0);
  EXPECT_EQ(second.first.evidence_json, R"({"n":2})");
  EXPECT_EQ(second.first.title, "t2");
  EXPECT_EQ(second.first.text, "newer text");
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRecord read, store().GetAlert("acme", "vision", first.first.id));
  EXPECT_EQ(read.title, "t2");

  // Another writer, another key, another run: other alerts.
  COHORT_ASSERT_OK_AND_ASSIGN(auto other, store().RaiseAlert(Raise("r1", "rank1", "code:x")));
  EXPECT_TRUE(other.second);
  COHORT_ASSERT_OK_AND_ASSIGN(auto run_level, store().RaiseAlert(Raise("r1", "", "code:x")));
  EXPECT_TRUE(run_level.second);
  EXPECT_NE(run_level.first.id, first.first.id);

  // One 'opened' event per opened alert, none for the bump, in id order.
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 100));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].alert_id, first.first.id);
  EXPECT_EQ(events[0].kind, "opened");
  EXPECT_EQ(events[0].entity, "acme");
  EXPECT_LT(events[0].id, events[1].id);
  COHORT_ASSERT_OK_AND_ASSIGN(events, store().ListAlertEvents(events[1].id, 100));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].alert_id, run_level.first.id);
}

TEST_P(StoreConformanceTest, ResolvedAlertReopensAsANewAlert) {
  MakeRun("r1");
  COHORT_ASSERT_OK_AND_ASSIGN(auto opened, store().RaiseAlert(Raise("r1", "w", "nan:loss")));
  COHORT_ASSERT_OK_AND_ASSIGN(
      bool was_open, store().ResolveAlert("acme", "vision", "r1", "w", "nan:loss", kT0 + 9));
  EXPECT_TRUE(was_open);
  COHORT_ASSERT_OK_AND_ASSIGN(
      was_open, store().ResolveAlert("acme", "vision", "r1", "w", "nan:loss", kT0 + 10));
  EXPECT_FALSE(was_open);  // nothing open any more
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRecord got, store().GetAlert("acme", "vision", opened.first.id));
  EXPECT_EQ(got.state, "resolved");
  EXPECT_EQ(got.resolved_ms, kT0 + 9);

  COHORT_ASSERT_OK_AND_ASSIGN(auto reopened,
                              store().RaiseAlert(Raise("r1", "w", "nan:loss", kT0 + 20)));
  EXPECT_TRUE(reopened.second);
  EXPECT_NE(reopened.first.id, opened.first.id);

  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 10));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "opened");
  EXPECT_EQ(events[1].kind, "resolved");
  EXPECT_EQ(events[1].alert_id, opened.first.id);
  EXPECT_EQ(events[2].kind, "opened");
  EXPECT_EQ(events[2].alert_id, reopened.first.id);

  // ResolveWriterAlerts resolves the writer's open alerts of one source.
  AlertRaise code = Raise("r1", "w", "code:other");
  code.source = "code";
  COHORT_ASSERT_OK(store().RaiseAlert(code).status());
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule nan_rule, store().CreateAlertRule(Rule("nan")));
  AlertRaise rule = Raise("r1", "w", "rule:1");
  rule.rule_id = nan_rule.id;
  COHORT_ASSERT_OK(store().RaiseAlert(rule).status());
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t n, store().ResolveWriterAlerts("acme", "vision", "r1", "w", "code", kT0));
  EXPECT_EQ(n, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      std::vector<AlertRecord> open,
      store().ListAlerts(AlertQuery{.entity = "acme", .project = "vision", .state = "open"}));
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].condition_key, "rule:1");
  EXPECT_EQ(open[0].rule_id, nan_rule.id);
  EXPECT_EQ(open[1].condition_key, "nan:loss");
}

// Code alerts are notifications: raised again (the client applied its wait_duration), a new
// alert opens (an 'opened' event: notified again) and the open one is closed without an event.
TEST_P(StoreConformanceTest, ACodeAlertRaisedAgainOpensANewOneAndClosesTheOldQuietly) {
  MakeRun("r1");
  AlertRaise code = Raise("r1", "w", "code:eval done");
  code.source = "code";
  code.evidence_json = R"({"time_ms":1})";
  COHORT_ASSERT_OK_AND_ASSIGN(auto first, store().RaiseAlert(code));
  // The same call posted again (its answer was lost): the same alert, bumped.
  COHORT_ASSERT_OK_AND_ASSIGN(auto retried, store().RaiseAlert(code));
  EXPECT_FALSE(retried.second);
  EXPECT_EQ(retried.first.id, first.first.id);
  EXPECT_EQ(retried.first.count, 2);
  code.now_ms = kT0 + 60'000;
  code.evidence_json = R"({"time_ms":60001})";
  COHORT_ASSERT_OK_AND_ASSIGN(auto second, store().RaiseAlert(code));
  EXPECT_TRUE(second.second);
  EXPECT_NE(second.first.id, first.first.id);
  EXPECT_EQ(second.first.count, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRecord old, store().GetAlert("acme", "vision", first.first.id));
  EXPECT_EQ(old.state, "resolved");
  EXPECT_EQ(old.resolved_ms, kT0 + 60'000);
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 10));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "opened");
  EXPECT_EQ(events[1].kind, "opened");
  EXPECT_EQ(events[1].alert_id, second.first.id);
}

TEST_P(StoreConformanceTest, AlertsAreListedFilteredAndAcked) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().UpsertRun(RunUpsert{.ref = RunRef{"acme", "other", "r1"}}).status());
  MakeRun("r2");
  AlertRaise err = Raise("r1", "w", "a");
  err.level = "ERROR";
  COHORT_ASSERT_OK_AND_ASSIGN(auto a, store().RaiseAlert(err));
  COHORT_ASSERT_OK_AND_ASSIGN(auto b, store().RaiseAlert(Raise("r2", "w", "b")));
  COHORT_ASSERT_OK(store().ResolveAlert("acme", "vision", "r2", "w", "b", kT0 + 1).status());
  AlertRaise elsewhere = Raise("r1", "w", "a");
  elsewhere.project = "other";
  COHORT_ASSERT_OK(store().RaiseAlert(elsewhere).status());

  AlertQuery q{.entity = "acme", .project = "vision"};
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> all, store().ListAlerts(q));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, b.first.id);  // newest first
  q.state = "open";
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> open, store().ListAlerts(q));
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].id, a.first.id);
  q = AlertQuery{.entity = "acme", .project = "vision", .level = "WARN"};
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> warn, store().ListAlerts(q));
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_EQ(warn[0].id, b.first.id);
  q = AlertQuery{.entity = "acme", .project = "vision", .run_id = "r1"};
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> r1, store().ListAlerts(q));
  ASSERT_EQ(r1.size(), 1u);
  q = AlertQuery{.entity = "acme", .project = "vision", .limit = 1};
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> one, store().ListAlerts(q));
  EXPECT_EQ(one.size(), 1u);

  COHORT_ASSERT_OK_AND_ASSIGN(AlertRecord acked,
                              store().AckAlert("acme", "vision", a.first.id, "alice", kT0 + 5));
  EXPECT_EQ(acked.acked_ms, kT0 + 5);
  EXPECT_EQ(acked.acked_by, "alice");
  COHORT_ASSERT_OK_AND_ASSIGN(acked,
                              store().AckAlert("acme", "vision", a.first.id, "bob", kT0 + 9));
  EXPECT_EQ(acked.acked_by, "alice");  // the first ack stays
  EXPECT_EQ(store().AckAlert("acme", "other", a.first.id, "x", kT0).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().GetAlert("acme", "vision", 999999).status().code(), StatusCode::kNotFound);
  Reopen();  // alerts live in the store
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRecord got, store().GetAlert("acme", "vision", a.first.id));
  EXPECT_EQ(got.acked_by, "alice");
  EXPECT_EQ(got.level, "ERROR");
  EXPECT_EQ(got.evidence_json, R"({"n":1})");
}

TEST_P(StoreConformanceTest, AlertRaiseIsCheckedAndRateLimitedPerProject) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().UpsertRun(RunUpsert{.ref = RunRef{"acme", "other", "r1"}}).status());
  AlertRaise bad = Raise("r1", "w", "a");
  bad.level = "LOUD";
  EXPECT_EQ(store().RaiseAlert(bad).status().code(), StatusCode::kInvalidArgument);
  bad = Raise("r1", "w", "a");
  bad.source = "gossip";
  EXPECT_EQ(store().RaiseAlert(bad).status().code(), StatusCode::kInvalidArgument);

  for (int64_t i = 0; i < kMaxAlertsOpenedPerProjectPerMinute; ++i) {
    COHORT_ASSERT_OK(
        store().RaiseAlert(Raise("r1", "w", "k" + std::to_string(i), kT0 + i)).status());
  }
  Result<std::pair<AlertRecord, bool>> over =
      store().RaiseAlert(Raise("r1", "w", "over", kT0 + 100));
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  // An open one is still bumped; another project is not limited; a minute later it opens again.
  COHORT_ASSERT_OK_AND_ASSIGN(auto bumped, store().RaiseAlert(Raise("r1", "w", "k0", kT0 + 200)));
  EXPECT_FALSE(bumped.second);
  AlertRaise other = Raise("r1", "w", "over", kT0 + 100);
  other.project = "other";
  COHORT_ASSERT_OK(store().RaiseAlert(other).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto later,
                              store().RaiseAlert(Raise("r1", "w", "over", kT0 + 61'000 + 100)));
  EXPECT_TRUE(later.second);
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 1000));
  EXPECT_EQ(int64_t(events.size()), kMaxAlertsOpenedPerProjectPerMinute + 2);
  // A raise that must not be held back (a writer that ended badly) opens past the limit.
  constexpr int64_t kT1 = kT0 + 200'000;
  for (int64_t i = 0; i < kMaxAlertsOpenedPerProjectPerMinute; ++i) {
    COHORT_ASSERT_OK(
        store().RaiseAlert(Raise("r1", "w", "m" + std::to_string(i), kT1 + i)).status());
  }
  EXPECT_EQ(store().RaiseAlert(Raise("r1", "w", "over2", kT1 + 100)).status().code(),
            StatusCode::kResourceExhausted);
  AlertRaise crash = Raise("r1", "w", "crash", kT1 + 100);
  crash.counts_against_limit = false;
  COHORT_ASSERT_OK_AND_ASSIGN(auto exempt, store().RaiseAlert(crash));
  EXPECT_TRUE(exempt.second);
}

TEST_P(StoreConformanceTest, WriterEndsStayUnhandledUntilMarkedAndARejoinHandlesThem) {
  MakeRun("r1");
  for (const char* w : {"w0", "w1", "w2"}) Join("r1", w);
  COHORT_ASSERT_OK(store().FinishWriter(Ref("r1"), "w0", RunState::kFailed, 2, kT0).status());
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<EndedWriter> ended, store().ListUnhandledWriterEnds(10));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].run.run_id, "r1");
  EXPECT_EQ(ended[0].label, "w0");
  EXPECT_EQ(ended[0].state, RunState::kFailed);
  EXPECT_EQ(ended[0].exit_code, 2);
  EXPECT_EQ(ended[0].finished_ms, kT0);
  EXPECT_FALSE(ended[0].run_ended);  // w1 and w2 still run
  COHORT_ASSERT_OK(store().MarkStaleWritersCrashed(NowMillis() + 1000, kT0 + 10).status());
  COHORT_ASSERT_OK_AND_ASSIGN(ended, store().ListUnhandledWriterEnds(10));
  ASSERT_EQ(ended.size(), 3u);
  EXPECT_EQ(ended[0].label, "w0");  // oldest end first
  EXPECT_EQ(ended[1].state, RunState::kCrashed);
  EXPECT_FALSE(ended[1].exit_code.has_value());
  EXPECT_EQ(ended[2].finished_ms, kT0 + 10);
  EXPECT_GT(ended[2].heartbeat_ms, 0);
  for (const EndedWriter& e : ended) EXPECT_TRUE(e.run_ended);
  // Marked with another end's time: still unhandled (it ended again after a re-join).
  COHORT_ASSERT_OK(store().MarkWriterEndHandled(Ref("r1"), "w0", kT0 + 1));
  COHORT_ASSERT_OK(store().MarkWriterEndHandled(Ref("r1"), "w1", kT0 + 10));
  COHORT_ASSERT_OK_AND_ASSIGN(ended, store().ListUnhandledWriterEnds(10));
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].label, "w0");
  EXPECT_EQ(ended[1].label, "w2");
  Join("r1", "w0");  // a new process of w0
  COHORT_ASSERT_OK_AND_ASSIGN(ended, store().ListUnhandledWriterEnds(10));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].label, "w2");
  EXPECT_FALSE(ended[0].run_ended);
}

// A run deleted after its caller saw it opens no alert: one opened then was never resolved.
TEST_P(StoreConformanceTest, AnAlertOfADeletedRunIsNotOpened) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().DeleteRun(Ref("r1")));
  EXPECT_EQ(store().RaiseAlert(Raise("r1", "w", "code:x")).status().code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(
      std::vector<AlertRecord> all,
      store().ListAlerts(AlertQuery{.entity = "acme", .project = "vision"}));
  EXPECT_TRUE(all.empty());
}

TEST_P(StoreConformanceTest, DeletingOrDisablingARuleResolvesItsAlertsAndRuleIdsAreNotReused) {
  MakeRun("r1");
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule first, store().CreateAlertRule(Rule("first")));
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule second, store().CreateAlertRule(Rule("second")));
  AlertRaise of_second = Raise("r1", "w", "rule:x");
  of_second.source = "rule";
  of_second.rule_id = second.id;
  COHORT_ASSERT_OK(store().RaiseAlert(of_second).status());
  COHORT_ASSERT_OK(store().DeleteAlertRule("acme", "vision", second.id));
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRecord> open,
                              store().ListAlerts(AlertQuery{
                                  .entity = "acme", .project = "vision", .state = "open"}));
  EXPECT_TRUE(open.empty());
  // The highest id deleted is not given to the next rule (it would inherit the old alerts).
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule third, store().CreateAlertRule(Rule("third")));
  EXPECT_GT(third.id, second.id);
  AlertRaise of_first = Raise("r1", "w", "rule:y");
  of_first.source = "rule";
  of_first.rule_id = first.id;
  COHORT_ASSERT_OK(store().RaiseAlert(of_first).status());
  // A rule deleted or disabled opens nothing more (another server's cache may still hold it).
  EXPECT_EQ(store().RaiseAlert(of_second).status().code(), StatusCode::kFailedPrecondition);
  first.enabled = false;
  first.updated_ms = kT0 + 5;
  COHORT_ASSERT_OK(store().UpdateAlertRule(first).status());
  COHORT_ASSERT_OK_AND_ASSIGN(open, store().ListAlerts(AlertQuery{
                                        .entity = "acme", .project = "vision", .state = "open"}));
  EXPECT_TRUE(open.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 100));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].kind, "resolved");
  EXPECT_EQ(events[3].kind, "resolved");
  of_first.now_ms = kT0 + 6;
  EXPECT_EQ(store().RaiseAlert(of_first).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(StoreConformanceTest, DeletingARunResolvesItsAlertsAndANewRunOfItsIdStartsOver) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().RaiseAlert(Raise("r1", "w", "code:x")).status());
  COHORT_ASSERT_OK(store().DeleteRun(Ref("r1")));
  COHORT_ASSERT_OK_AND_ASSIGN(
      std::vector<AlertRecord> all,
      store().ListAlerts(AlertQuery{.entity = "acme", .project = "vision"}));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, "resolved");
  MakeRun("r1");
  COHORT_ASSERT_OK_AND_ASSIGN(auto again, store().RaiseAlert(Raise("r1", "w", "code:x")));
  EXPECT_TRUE(again.second);  // a new alert (notified), not a bump of the deleted run's
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 100));
  ASSERT_EQ(events.size(), 3u);  // ids without holes: the dispatcher waits for none
  EXPECT_EQ(events[2].id, events[0].id + 2);
}

TEST_P(StoreConformanceTest, OpenRuleAlertsAreListedWithWhetherTheirWriterRunsAndResolvedByRule) {
  MakeRun("r1");
  Join("r1", "live");
  Join("r1", "gone");
  COHORT_ASSERT_OK(store().FinishWriter(Ref("r1"), "gone", RunState::kCrashed, {}, kT0).status());
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule hung, store().CreateAlertRule(Rule("hung", "hung")));
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule nan, store().CreateAlertRule(Rule("nan")));
  for (const char* w : {"live", "gone", ""}) {
    for (const AlertRule* r : {&hung, &nan}) {
      AlertRaise a = Raise("r1", w, "rule:" + std::to_string(r->id));
      a.source = "rule";
      a.rule_id = r->id;
      COHORT_ASSERT_OK(store().RaiseAlert(a).status());
    }
  }
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<OpenRuleAlert> open,
                              store().ListOpenRuleAlerts({"hung", "stale_metric"}, 100));
  ASSERT_EQ(open.size(), 3u);
  EXPECT_EQ(open[0].alert.writer_label, "live");
  EXPECT_TRUE(open[0].live);
  EXPECT_EQ(open[0].rule_kind, "hung");
  EXPECT_EQ(open[1].alert.writer_label, "gone");
  EXPECT_FALSE(open[1].live);
  EXPECT_EQ(open[2].alert.writer_label, "");
  EXPECT_TRUE(open[2].live);  // the run runs
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t n, store().ResolveRuleAlerts("acme", "vision", {hung.id}, "r1", "gone", kT0 + 1));
  EXPECT_EQ(n, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      n, store().ResolveRuleAlerts("acme", "vision", {hung.id, nan.id}, std::nullopt,
                                   std::nullopt, kT0 + 2));
  EXPECT_EQ(n, 5);  // the other two of `hung`, the three of `nan`
  COHORT_ASSERT_OK_AND_ASSIGN(open, store().ListOpenRuleAlerts({"hung"}, 100));
  EXPECT_TRUE(open.empty());
}

TEST_P(StoreConformanceTest, AlertRulesCrud) {
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule a, store().CreateAlertRule(Rule("nan")));
  EXPECT_GT(a.id, 0);
  EXPECT_EQ(a.kind, "metric_nonfinite");
  EXPECT_TRUE(a.enabled);
  EXPECT_FALSE(a.builtin);
  EXPECT_EQ(store().CreateAlertRule(Rule("nan")).status().code(), StatusCode::kAlreadyExists);
  AlertRule t = Rule("loss high", "metric_threshold");
  t.spec_json = R"({"key":"loss","op":">","value":10})";
  t.level = "ERROR";
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule b, store().CreateAlertRule(t));

  b.name = "loss very high";
  b.enabled = false;
  b.spec_json = R"({"key":"loss","op":">","value":100})";
  b.updated_ms = kT0 + 1;
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule updated, store().UpdateAlertRule(b));
  EXPECT_EQ(updated.name, "loss very high");
  EXPECT_FALSE(updated.enabled);
  EXPECT_EQ(updated.level, "ERROR");
  EXPECT_EQ(updated.updated_ms, kT0 + 1);
  b.name = "nan";  // taken
  EXPECT_EQ(store().UpdateAlertRule(b).status().code(), StatusCode::kAlreadyExists);
  AlertRule missing = Rule("x");
  missing.id = 424242;
  EXPECT_EQ(store().UpdateAlertRule(missing).status().code(), StatusCode::kNotFound);
  AlertRule bad = Rule("bad");
  bad.level = "LOUD";
  EXPECT_EQ(store().CreateAlertRule(bad).status().code(), StatusCode::kInvalidArgument);

  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRule> rules,
                              store().ListAlertRules("acme", "vision"));
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[1].spec_json, R"({"key":"loss","op":">","value":100})");
  COHORT_ASSERT_OK_AND_ASSIGN(AlertRule got, store().GetAlertRule("acme", "vision", a.id));
  EXPECT_EQ(got.name, "nan");
  EXPECT_EQ(store().GetAlertRule("acme", "other", a.id).status().code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK(store().DeleteAlertRule("acme", "vision", a.id));
  EXPECT_EQ(store().DeleteAlertRule("acme", "vision", a.id).code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(rules, store().ListAlertRules("acme", "vision"));
  EXPECT_EQ(rules.size(), 1u);
}

TEST_P(StoreConformanceTest, DefaultAlertRulesAreCreatedOncePerProject) {
  AlertRule d1 = Rule("writer crashed", "writer_state");
  d1.builtin = true;
  AlertRule d2 = Rule("nonfinite");
  d2.builtin = true;
  COHORT_ASSERT_OK_AND_ASSIGN(bool created,
                              store().InstallDefaultAlertRules("acme", "vision", {d1, d2}, kT0));
  EXPECT_TRUE(created);
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertRule> rules,
                              store().ListAlertRules("acme", "vision"));
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_TRUE(rules[0].builtin);
  // A deleted default stays deleted.
  COHORT_ASSERT_OK(store().DeleteAlertRule("acme", "vision", rules[0].id));
  COHORT_ASSERT_OK_AND_ASSIGN(created,
                              store().InstallDefaultAlertRules("acme", "vision", {d1, d2}, kT0));
  EXPECT_FALSE(created);
  COHORT_ASSERT_OK_AND_ASSIGN(rules, store().ListAlertRules("acme", "vision"));
  EXPECT_EQ(rules.size(), 1u);
  COHORT_ASSERT_OK_AND_ASSIGN(created,
                              store().InstallDefaultAlertRules("acme", "other", {d1, d2}, kT0));
  EXPECT_TRUE(created);
}

TEST_P(StoreConformanceTest, ConcurrentRaisesOfOneConditionOpenOneAlert) {
  MakeRun("r1");
  constexpr int kCallers = 8;
  std::atomic<int> opened{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto r = store().RaiseAlert(Raise("r1", "w", "race", kT0 + i));
      if (!r.ok()) {
        ++failed;
      } else if (r->second) {
        ++opened;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(opened.load(), 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      std::vector<AlertRecord> all,
      store().ListAlerts(AlertQuery{.entity = "acme", .project = "vision"}));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].count, kCallers);
  COHORT_ASSERT_OK_AND_ASSIGN(std::vector<AlertEvent> events, store().ListAlertEvents(0, 100));
  EXPECT_EQ(events.size(), 1u);
}

}  // namespace cohort::store
