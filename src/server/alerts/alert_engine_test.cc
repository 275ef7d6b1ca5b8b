#include "server/alerts/alert_engine.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <set>

#include "core/clock.h"
#include "store/run_state.h"
#include "store/temp_dir_for_test.h"

namespace cohort::alerts {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
const store::RunRef kRun{"acme", "vision", "run1"};

class AlertEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenStore("sqlite://" + (dir_.path() / "cohort.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    engine_ = std::make_unique<AlertEngine>(store_.get(), insight::StragglerOptions{});
    // Alerts open only on a run that exists (as every batch the engine sees has one).
    ASSERT_TRUE(store_->UpsertRun(store::RunUpsert{.ref = kRun}).ok());
  }

  // A batch of `key` at steps first, first+1, ... with `values`.
  static store::IngestBatch Batch(const std::string& key, int64_t first,
                                  const std::vector<double>& values) {
    store::IngestBatchBuilder b(1);
    for (size_t i = 0; i < values.size(); ++i) {
      b.AddHistoryRow(first + int64_t(i), kNow, {{key, values[i]}});
    }
    return b.Finish();
  }
  void Send(const std::string& label, const store::IngestBatch& batch, int64_t now = kNow) {
    engine_->OnBatch(kRun, label, batch, store::IngestResult{}, now);
  }
  std::vector<store::AlertRecord> Alerts(std::optional<std::string> state = std::nullopt) {
    auto a = store_->ListAlerts(
        store::AlertQuery{.entity = "acme", .project = "vision", .state = std::move(state)});
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : std::vector<store::AlertRecord>{};
  }
  int64_t AddRule(const std::string& name, const std::string& kind, const std::string& spec,
                  const std::string& level = "WARN") {
    auto r = store_->CreateAlertRule(store::AlertRule{.entity = "acme",
                                                      .project = "vision",
                                                      .name = name,
                                                      .kind = kind,
                                                      .spec_json = spec,
                                                      .level = level});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    engine_->Invalidate("acme", "vision");
    return r.ok() ? r->id : 0;
  }

  void Join(const std::string& label, const store::RunRef& run = kRun) {
    ASSERT_TRUE(store_->UpsertRun(store::RunUpsert{.ref = run}).ok());
    auto w = store_->JoinWriter(run, store::WriterJoin{.label = label});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  }
  // Ends the writer in the store, then lets the engine handle it (as the finish route does).
  void End(const std::string& label, store::RunState state, std::optional<int> exit_code,
           int64_t now) {
    auto w = store_->FinishWriter(kRun, label, state, exit_code, now);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    engine_->HandleWriterEnds(now);
  }
  // Every running writer crashed (the heartbeat sweep), then the engine's tick, as the server's
  // sweep does (the runs it ended as orphaned told first).
  void Crash(int64_t now) {
    auto swept = store_->MarkStaleWritersCrashed(NowMillis() + 1, now);
    ASSERT_TRUE(swept.ok()) << swept.status().ToString();
    for (const store::RunRef& run : swept->orphans_ended) engine_->OnRunEnded(run, now);
    engine_->Tick(now);
  }
  // The writer, marked crashed at `now`, heartbeats again (as the heartbeat coalescer tells).
  void Revive(const std::string& label, int64_t now) {
    auto revived = store_->Heartbeat(kRun, label, now + store::kReviveAfterCrashMs);
    ASSERT_TRUE(revived.ok()) << revived.status().ToString();
    ASSERT_TRUE(*revived) << label;
    engine_->OnWriterRevived(kRun, label, now + store::kReviveAfterCrashMs);
  }
  std::vector<store::EndedWriter> Unhandled() {
    auto e = store_->ListUnhandledWriterEnds(100);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : std::vector<store::EndedWriter>{};
  }
  // A statement on the database behind the store's back (faults the engine cannot cause).
  bool Sql(const std::string& statement) {
    sqlite3* db = nullptr;
    bool ok = sqlite3_open((dir_.path() / "cohort.db").c_str(), &db) == SQLITE_OK;
    if (ok) sqlite3_busy_timeout(db, 5000);
    ok = ok && sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
  }

  store::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<AlertEngine> engine_;
};

TEST_F(AlertEngineTest, DefaultRulesAreCreatedOnFirstUse) {
  auto rules = engine_->Rules("acme", "vision", kNow);
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ((*rules)->rules().size(), 2u);
  auto stored = store_->ListAlertRules("acme", "vision");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 2u);
}

TEST_F(AlertEngineTest, NanOpensOneAlertWithEvidenceAndAFiniteValueResolvesIt) {
  Send("rank0", Batch("loss", 10, {1.0, std::nan(""), 2.0, std::nan("")}));
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "rank0");
  EXPECT_EQ(open[0].title, "loss is NaN");
  EXPECT_EQ(open[0].source, "rule");
  EXPECT_EQ(open[0].level, "WARN");
  EXPECT_TRUE(open[0].rule_id.has_value());
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("key").as_string(), "loss");
  EXPECT_EQ(ev->at("step").as_int64(), 11);
  EXPECT_EQ(ev->at("value").as_string(), "NaN");
  // More NaNs soon after: the same alert, no store call needed (within kBumpIntervalMs).
  Send("rank0", Batch("loss", 14, {std::nan("")}), kNow + 10);
  EXPECT_EQ(Alerts().size(), 1u);
  // Another writer: its own alert.
  Send("rank1", Batch("loss", 0, {INFINITY}));
  EXPECT_EQ(Alerts("open").size(), 2u);
  // A finite value resolves rank0's.
  Send("rank0", Batch("loss", 15, {0.5}), kNow + 20);
  open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "rank1");
  auto events = store_->ListAlertEvents(0, 100);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[2].kind, "resolved");
}

TEST_F(AlertEngineTest, ThresholdFiresAfterItsStepAndResolvesOnTheGoodSide) {
  AddRule("loss high", "metric_threshold", R"({"key":"loss","op":">","value":10,"after_step":5})",
          "ERROR");
  Send("w", Batch("loss", 0, {20, 30}));  // before after_step: ignored
  EXPECT_TRUE(Alerts().empty());
  Send("w", Batch("loss", 5, {1, 12, 11}));
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].level, "ERROR");
  EXPECT_EQ(open[0].title, "loss > 10");  // the threshold as written, not "1E1"
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("step").as_int64(), 6);
  EXPECT_EQ(ev->at("value").as_double(), 12);
  EXPECT_EQ(ev->at("threshold").as_double(), 10);
  EXPECT_EQ(ev->at("op").as_string(), ">");
  Send("w", Batch("other", 9, {100}));  // another key: nothing
  EXPECT_EQ(Alerts("open").size(), 1u);
  Send("w", Batch("loss", 8, {9.5}), kNow + 5);
  EXPECT_TRUE(Alerts("open").empty());
  ASSERT_EQ(Alerts("resolved").size(), 1u);
}

// A batch whose steps straddle after_step: only its rows from after_step count (the row by row
// path; batches wholly before or after it are decided from the column's extremes).
TEST_F(AlertEngineTest, ThresholdAfterAStepInsideTheBatchLooksAtItsLaterRowsOnly) {
  AddRule("loss high", "metric_threshold", R"({"key":"loss","op":">","value":10,"after_step":5})",
          "ERROR");
  Send("w", Batch("loss", 3, {50, 50, 12, 13}));  // steps 3..6
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("step").as_int64(), 5);
  EXPECT_EQ(ev->at("value").as_double(), 12);
  // Below the threshold from step 5 on: nothing opens (steps 3, 4 are before after_step).
  AddRule("acc low", "metric_threshold", R"({"key":"acc","op":"<","value":0.5,"after_step":5})",
          "WARN");
  Send("w", Batch("acc", 3, {0.1, 0.2, 0.9, 0.8}));
  EXPECT_EQ(Alerts("open").size(), 1u);
}

TEST_F(AlertEngineTest, ConditionsOpenBeforeARestartAreResolvedAfterIt) {
  AddRule("loss high", "metric_threshold", R"({"key":"loss","op":">","value":10})");
  Send("w", Batch("loss", 0, {20}));
  ASSERT_EQ(Alerts("open").size(), 1u);
  engine_ = std::make_unique<AlertEngine>(store_.get(),
                                          insight::StragglerOptions{});  // a restarted server
  Send("w", Batch("loss", 1, {1}));
  EXPECT_TRUE(Alerts("open").empty());
}

TEST_F(AlertEngineTest, DisabledAndDeletedRulesDoNotFire) {
  auto rules = store_->ListAlertRules("acme", "vision");  // none yet: defaults come on first use
  ASSERT_TRUE(rules.ok());
  auto loaded = engine_->Rules("acme", "vision", kNow);
  ASSERT_TRUE(loaded.ok());
  for (const RuleSpec& r : (*loaded)->rules()) {
    ASSERT_TRUE(store_->DeleteAlertRule("acme", "vision", r.id).ok());
  }
  engine_->Invalidate("acme", "vision");
  Send("w", Batch("loss", 0, {std::nan("")}));
  EXPECT_TRUE(Alerts().empty());
}

// A rule deleted or disabled by another server (this engine's cache still holds it) opens no
// alert: one was opened after the deletion had resolved the rule's alerts, and nothing ever
// resolved it.
TEST_F(AlertEngineTest, ARuleDeletedOrDisabledElsewhereOpensNothing) {
  for (bool remove : {true, false}) {
    const int64_t id = AddRule(remove ? "gone" : "off", "metric_threshold",
                               R"({"key":"loss","op":">","value":10})");
    Send("w", Batch("loss", 0, {1}));  // caches the rules
    if (remove) {
      ASSERT_TRUE(store_->DeleteAlertRule("acme", "vision", id).ok());
    } else {
      auto rule = store_->GetAlertRule("acme", "vision", id);
      ASSERT_TRUE(rule.ok());
      rule->enabled = false;
      ASSERT_TRUE(store_->UpdateAlertRule(*rule).ok());
    }
    Send("w", Batch("loss", 1, {50}), kNow + 1);
    for (const store::AlertRecord& a : Alerts()) EXPECT_NE(a.rule_id, id) << a.title;
    EXPECT_EQ(engine_->errors(), 0);
  }
}

// A rule given another key keeps no alert of the old key open: nothing evaluates it any more.
TEST_F(AlertEngineTest, ARuleGivenAnotherKeyResolvesItsOpenAlerts) {
  const int64_t id = AddRule("high", "metric_threshold", R"({"key":"loss","op":">","value":10})");
  Send("w", Batch("loss", 0, {50}));
  ASSERT_EQ(Alerts("open").size(), 1u);
  auto rule = store_->GetAlertRule("acme", "vision", id);
  ASSERT_TRUE(rule.ok());
  rule->spec_json = R"({"key":"val_loss","op":">","value":10})";
  ASSERT_TRUE(store_->UpdateAlertRule(*rule).ok());
  EXPECT_TRUE(Alerts("open").empty());
  // A rename (same kind and spec) keeps them.
  engine_->Invalidate("acme", "vision");
  Send("w", Batch("val_loss", 1, {50}), kNow + 1);
  ASSERT_EQ(Alerts("open").size(), 1u);
  rule = store_->GetAlertRule("acme", "vision", id);
  ASSERT_TRUE(rule.ok());
  rule->name = "renamed";
  ASSERT_TRUE(store_->UpdateAlertRule(*rule).ok());
  EXPECT_EQ(Alerts("open").size(), 1u);
}

// A writer's open condition is found among its own alerts, however many other writers of the
// run have open: the run's newest 1000 for all writers left it out, and it never resolved.
TEST_F(AlertEngineTest, AWritersOpenAlertResolvesBehindAThousandOfOtherWriters) {
  Join("w0");
  Send("w0", Batch("loss", 0, {std::nan("")}));
  ASSERT_EQ(Alerts("open").size(), 1u);
  for (int i = 0; i < 1001; ++i) {
    auto raised = store_->RaiseAlert(store::AlertRaise{.entity = "acme",
                                                       .project = "vision",
                                                       .run_id = "run1",
                                                       .writer_label = "w" + std::to_string(i + 1),
                                                       .source = "code",
                                                       .condition_key = "code:x",
                                                       .level = "INFO",
                                                       .title = "x",
                                                       .now_ms = kNow + i,
                                                       .counts_against_limit = false});
    ASSERT_TRUE(raised.ok()) << raised.status().ToString();
  }
  Send("w0", Batch("loss", 1, {1.0}), kNow + 31'000);  // the writer's state read again
  auto open = store_->ListAlerts(store::AlertQuery{
      .entity = "acme", .project = "vision", .state = "open", .writer_label = "w0"});
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_TRUE(open->empty()) << open->size() << " open, the first: " << open->front().title;
}

TEST_F(AlertEngineTest, CrashedWriterRaisesWriterStateWithEvidence) {
  Join("rank3");
  Crash(kNow);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "rank3");
  EXPECT_EQ(open[0].level, "ERROR");
  EXPECT_EQ(open[0].title, "writer rank3 crashed");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("state").as_string(), "crashed");
  EXPECT_TRUE(ev->at("exit_code").is_null());
  EXPECT_GT(ev->at("last_heartbeat_ms").as_int64(), 0);
  EXPECT_TRUE(Unhandled().empty());
}

TEST_F(AlertEngineTest, ManyWritersOfARunCrashedAtOnceRaiseOneRunLevelAlert) {
  for (int i = 0; i < 6; ++i) Join("rank" + std::to_string(i));
  Join("solo", store::RunRef{"acme", "vision", "run2"});
  Crash(kNow);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 2u);  // run1 as a whole, run2's one writer
  const store::AlertRecord& run_level = open[0].run_id == "run1" ? open[0] : open[1];
  EXPECT_EQ(run_level.writer_label, "");
  EXPECT_EQ(run_level.title, "6 writers crashed");
  EXPECT_EQ(run_level.level, "ERROR");
  auto ev = json::Parse(run_level.evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("count").as_int64(), 6);
  ASSERT_EQ(ev->at("writers").as_array().size(), 6u);
  EXPECT_EQ(ev->at("writers").as_array()[2].at("writer").as_string(), "rank2");
  const store::AlertRecord& solo = open[0].run_id == "run2" ? open[0] : open[1];
  EXPECT_EQ(solo.writer_label, "solo");
  EXPECT_TRUE(Unhandled().empty());
}

// The sweep marked six writers crashed while their heartbeats could not arrive; they come back
// one by one: the run-level alert lists those still crashed, and once they are few enough it is
// resolved and each of them gets its own alert, as a sweep finding only them would have raised.
TEST_F(AlertEngineTest, RevivedWritersReviseTheRunLevelCrashAlert) {
  for (int i = 0; i < 6; ++i) Join("rank" + std::to_string(i));
  Crash(kNow);
  ASSERT_EQ(Alerts("open").size(), 1u);
  Revive("rank0", kNow);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);  // 5 still crashed: more than kMaxWriterAlertsPerSweep
  EXPECT_EQ(open[0].writer_label, "");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("count").as_int64(), 5);
  ASSERT_EQ(ev->at("writers").as_array().size(), 5u);
  EXPECT_EQ(ev->at("writers").as_array()[0].at("writer").as_string(), "rank1");
  EXPECT_EQ(open[0].title, "5 writers crashed");  // its title and text say so too
  EXPECT_NE(open[0].text.find(" 5 writers of run run1 "), std::string::npos) << open[0].text;
  Revive("rank1", kNow);
  open = Alerts("open");
  std::set<std::string> titles;
  for (const store::AlertRecord& a : open) titles.insert(a.title);
  EXPECT_EQ(titles, (std::set<std::string>{"writer rank2 crashed", "writer rank3 crashed",
                                           "writer rank4 crashed", "writer rank5 crashed"}));
  std::vector<store::AlertRecord> resolved = Alerts("resolved");
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].writer_label, "");
  // The others come back: nothing stays open.
  for (const char* w : {"rank2", "rank3", "rank4", "rank5"}) Revive(w, kNow);
  EXPECT_TRUE(Alerts("open").empty());
}

TEST_F(AlertEngineTest, WriterEndRaisesForBadStatesOnlyAndResolvesCodeAlerts) {
  Join("w");
  Join("w2");
  ASSERT_TRUE(store_
                  ->RaiseAlert(store::AlertRaise{.entity = "acme",
                                                 .project = "vision",
                                                 .run_id = "run1",
                                                 .writer_label = "w",
                                                 .source = "code",
                                                 .condition_key = "code:hi",
                                                 .level = "INFO",
                                                 .title = "hi",
                                                 .now_ms = kNow})
                  .ok());
  End("w", store::RunState::kFinished, 0, kNow + 1);
  EXPECT_TRUE(Alerts("open").empty());  // finished: no alert; the code alert resolved
  End("w2", store::RunState::kFailed, 3, kNow + 2);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].title, "writer w2 failed");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("exit_code").as_int64(), 3);
}

// A resumed writer that crashes again is a new alert (a new webhook call), not a bump of the
// crash its earlier process left open.
TEST_F(AlertEngineTest, AWriterThatRejoinsStartsOverAndItsNextCrashIsANewAlert) {
  Join("rank0");
  End("rank0", store::RunState::kPreempted, std::nullopt, kNow);
  ASSERT_EQ(Alerts("open").size(), 1u);
  Join("rank0");
  engine_->OnWriterRejoined(kRun, "rank0", kNow + 10);
  EXPECT_TRUE(Alerts("open").empty());
  End("rank0", store::RunState::kCrashed, std::nullopt, kNow + 20);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].title, "writer rank0 crashed");
  EXPECT_EQ(open[0].count, 1);
  auto events = store_->ListAlertEvents(0, 100);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> kinds;
  for (const auto& e : *events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"opened", "resolved", "opened"}));
}

// The server dies after the transaction that ended the writer and before the alert: the end is
// in the store, unhandled, and the next process's first sweep raises it.
TEST_F(AlertEngineTest, AnEndCommittedBeforeTheServerDiedIsAlertedByTheNextProcess) {
  Join("rank0");
  Join("rank1");
  ASSERT_TRUE(store_->FinishWriter(kRun, "rank0", store::RunState::kFailed, 2, kNow).ok());
  ASSERT_TRUE(store_->MarkStaleWritersCrashed(NowMillis() + 1, kNow).ok());
  ASSERT_EQ(Unhandled().size(), 2u);
  EXPECT_TRUE(Alerts().empty());
  AlertEngine restarted(store_.get(), insight::StragglerOptions{});
  restarted.Tick(kNow + 5'000);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].title, "writer rank1 crashed");
  EXPECT_EQ(open[1].title, "writer rank0 failed");
  EXPECT_TRUE(Unhandled().empty());
  restarted.Tick(kNow + 10'000);  // handled once
  EXPECT_EQ(Alerts().size(), 2u);
  EXPECT_EQ(Alerts()[0].count, 1);
}

// A NaN storm of 64 ranks ate the project's rate limit a moment before the job crashed: the
// crash is alerted all the same.
TEST_F(AlertEngineTest, ACrashIsAlertedEvenPastTheProjectsRateLimit) {
  for (int i = 0; i < int(store::kMaxAlertsOpenedPerProjectPerMinute) + 4; ++i) {
    Send("rank" + std::to_string(i), Batch("loss", 0, {std::nan("")}));
  }
  EXPECT_EQ(Alerts("open").size(), size_t(store::kMaxAlertsOpenedPerProjectPerMinute));
  EXPECT_GT(engine_->rate_limited(), 0);
  Join("rank0");
  Crash(kNow + 1);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), size_t(store::kMaxAlertsOpenedPerProjectPerMinute) + 1);
  EXPECT_EQ(open[0].title, "writer rank0 crashed");
}

// A store error while handling an end leaves it unhandled; the next sweep raises it.
TEST_F(AlertEngineTest, AnEndWhoseAlertCouldNotBeStoredIsTriedAgain) {
  Join("rank0");
  ASSERT_TRUE(store_->FinishWriter(kRun, "rank0", store::RunState::kFailed, 1, kNow).ok());
  // The database refuses new alerts for a while.
  ASSERT_TRUE(Sql("CREATE TRIGGER refuse BEFORE INSERT ON alerts BEGIN "
                  "SELECT RAISE(ABORT, 'injected'); END"));
  engine_->HandleWriterEnds(kNow + 1);
  EXPECT_TRUE(Alerts().empty());
  EXPECT_GT(engine_->errors(), 0);
  EXPECT_EQ(Unhandled().size(), 1u);
  ASSERT_TRUE(Sql("DROP TRIGGER refuse"));
  engine_->Tick(kNow + 2);
  ASSERT_EQ(Alerts("open").size(), 1u);
  EXPECT_EQ(Alerts("open")[0].title, "writer rank0 failed");
  EXPECT_TRUE(Unhandled().empty());
}

TEST_F(AlertEngineTest, HungWriterOpensOnATickAndResolvesWhenItAdvances) {
  AddRule("hung", "hung", R"({"factor":3,"min_minutes":0.5})", "ERROR");
  int64_t now = kNow;
  for (int64_t step = 0; step < 10; ++step, now += 1000) {
    Send("r0", Batch("loss", step, {1.0}), now);
    Send("r1", Batch("loss", step, {1.0}), now);
  }
  engine_->Tick(now);
  EXPECT_TRUE(Alerts().empty());
  // r1 stops advancing (its agent still heartbeats); r0 goes on.
  for (int64_t step = 10; step < 50; ++step, now += 1000) {
    Send("r0", Batch("loss", step, {1.0}), now);
    engine_->OnHeartbeat(kRun, "r1", now);
    engine_->Tick(now);
  }
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "r1");
  EXPECT_EQ(open[0].title, "writer r1 hung");
  EXPECT_EQ(open[0].level, "ERROR");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_GE(ev->at("stalled_ms").as_int64(), 30'000);
  EXPECT_EQ(ev->at("threshold_ms").as_int64(), 30'000);
  EXPECT_EQ(ev->at("writers").as_array()[0].at("last_step").as_int64(), 9);
  // It advances: the next tick resolves it.
  Send("r1", Batch("loss", 50, {1.0}), now);
  engine_->Tick(now);
  EXPECT_TRUE(Alerts("open").empty());
  EXPECT_EQ(Alerts("resolved").size(), 1u);
}

TEST_F(AlertEngineTest, StaleMetricOpensAndResolves) {
  AddRule("eval stale", "stale_metric", R"({"key":"eval/*","minutes":1})");
  Send("w", Batch("eval/acc", 0, {0.5}), kNow);
  for (int64_t s = 1; s <= 70; ++s) {
    Send("w", Batch("loss", s, {1.0}), kNow + s * 1000);
    engine_->Tick(kNow + s * 1000);
  }
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].title, "eval/acc has no new point");
  Send("w", Batch("eval/acc", 71, {0.6}), kNow + 71'000);
  engine_->Tick(kNow + 71'000);
  EXPECT_TRUE(Alerts("open").empty());
}

// Steps first..last of `key`, step s at time t0 + s * ms_per_step.
store::IngestBatch Steps(int64_t first, int64_t last, int64_t t0, int64_t ms_per_step) {
  store::IngestBatchBuilder b(1);
  for (int64_t s = first; s <= last; ++s) b.AddHistoryRow(s, t0 + s * ms_per_step, {{"loss", 1.0}});
  return b.Finish();
}

// System rows at t, t + 10 s, ... with two GPUs at `gpu0` and `gpu1` percent (the builder
// prefixes system keys with "system/").
store::IngestBatch Gpus(int64_t t, int rows, double gpu0, double gpu1) {
  store::IngestBatchBuilder b(1);
  for (int i = 0; i < rows; ++i) {
    b.AddSystemRow(t + i * 10'000,
                   {{"gpu.0.gpu", gpu0}, {"gpu.1.gpu", gpu1}, {"gpu.0.temp", 60.0}});
  }
  return b.Finish();
}

TEST_F(AlertEngineTest, StragglerOpensAfterForMinutesWithItsNumbersAndResolvesWhenItCatchesUp) {
  AddRule("slow rank", "straggler", R"({"window":20,"for_minutes":0.5})");
  // r3 takes 300 ms per step, the others 100 ms; all at step 30.
  for (const char* w : {"r0", "r1", "r2"}) Send(w, Steps(0, 30, kNow, 100), kNow);
  Send("r3", Steps(0, 30, kNow, 300), kNow);
  engine_->Tick(kNow + 1000);
  EXPECT_TRUE(Alerts().empty());  // flagged, not yet for 30 s
  engine_->Tick(kNow + 20'000);
  EXPECT_TRUE(Alerts().empty());
  engine_->Tick(kNow + 31'000);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "r3");
  EXPECT_EQ(open[0].title, "writer r3 straggles: 300 ms per step (median 100 ms)");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_DOUBLE_EQ(ev->at("step_time_ms").to_number<double>(), 300);
  EXPECT_DOUBLE_EQ(ev->at("ratio").to_number<double>(), 3);
  EXPECT_GE(ev->at("z").to_number<double>(), 3.5);
  EXPECT_GT(ev->at("lag_ms").to_number<double>(), 0);
  EXPECT_EQ(ev->at("last_step").as_int64(), 30);
  EXPECT_EQ(ev->at("flagged_since_ms").as_int64(), kNow + 1000);
  EXPECT_FALSE(ev->at("reasons").as_array().empty());
  EXPECT_EQ(ev->at("thresholds").at("window").as_int64(), 20);
  // Still flagged: still one alert.
  engine_->Tick(kNow + 45'000);
  EXPECT_EQ(Alerts().size(), 1u);
  // r3 keeps pace with the others for a window: resolved.
  for (const char* w : {"r0", "r1", "r2", "r3"}) Send(w, Steps(31, 90, kNow, 100), kNow + 50'000);
  engine_->Tick(kNow + 50'000);
  EXPECT_TRUE(Alerts("open").empty());
  EXPECT_EQ(Alerts("resolved").size(), 1u);
}

TEST_F(AlertEngineTest, StragglerNeedsMinWritersAndFlagsTheWriterBehindADesync) {
  AddRule("desync", "straggler", R"({"for_minutes":0})");
  Send("r0", Steps(0, 30, kNow, 100), kNow);
  Send("r1", Steps(0, 5, kNow, 100), kNow);
  engine_->Tick(kNow + 1000);
  EXPECT_TRUE(Alerts().empty());  // two writers: under min_writers (3)
  Send("r2", Steps(0, 30, kNow, 100), kNow);
  engine_->Tick(kNow + 2000);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "r1");
  EXPECT_EQ(open[0].title, "writer r1 is 25 steps behind");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->at("desync").at("step_gap").as_int64(), 25);
  EXPECT_EQ(ev->at("desync").at("behind").as_string(), "r1");
  // r1 ends: its alert is resolved with its end, and it is forgotten.
  Join("r1");
  End("r1", store::RunState::kFinished, 0, kNow + 3000);
  EXPECT_TRUE(Alerts("open").empty());
  engine_->Tick(kNow + 4000);
  EXPECT_TRUE(Alerts("open").empty());
}

TEST_F(AlertEngineTest, GpuUnderusedOpensForTheIdleWriterAndResolves) {
  AddRule("idle gpus", "gpu_underused", R"({"ratio":0.5,"min_util":50,"for_minutes":1})");
  Send("r0", Gpus(kNow, 6, 95, 95), kNow);
  Send("r1", Gpus(kNow, 6, 90, 100), kNow);
  Send("r2", Gpus(kNow, 6, 10, 20), kNow);
  engine_->Tick(kNow);
  EXPECT_TRUE(Alerts().empty());  // not yet for a minute
  for (const char* w : {"r0", "r1", "r2"}) engine_->OnHeartbeat(kRun, w, kNow + 61'000);
  engine_->Tick(kNow + 61'000);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "r2");
  EXPECT_EQ(open[0].title, "writer r2 GPUs at 15% (others 95%)");
  auto ev = json::Parse(open[0].evidence_json);
  ASSERT_TRUE(ev.ok());
  EXPECT_DOUBLE_EQ(ev->at("gpu_util").to_number<double>(), 15);
  EXPECT_DOUBLE_EQ(ev->at("others_median").to_number<double>(), 95);
  EXPECT_EQ(ev->at("samples").as_int64(), 6);
  // r2 busy again for five minutes: its old samples age out and the alert resolves.
  Send("r2", Gpus(kNow + 360'000, 2, 90, 90), kNow + 70'000);
  engine_->Tick(kNow + 70'000);
  EXPECT_TRUE(Alerts("open").empty());
  EXPECT_EQ(Alerts("resolved").size(), 1u);
}

TEST_F(AlertEngineTest, GpuUnderusedNeedsBusyOthers) {
  AddRule("idle gpus", "gpu_underused", R"({"for_minutes":0})");
  Send("r0", Gpus(kNow, 3, 30, 30), kNow);  // the whole job at 30%: the others not busy
  Send("r1", Gpus(kNow, 3, 40, 40), kNow);
  Send("r2", Gpus(kNow, 3, 5, 5), kNow);
  engine_->Tick(kNow);
  EXPECT_TRUE(Alerts().empty());
}

// A restarted server takes over the hung alerts its predecessor left open: one whose writer ended
// is resolved at once; the others are kept while the rule has not had its window to find them
// again, and resolved after it unless found again.
TEST_F(AlertEngineTest, TickAlertsLeftOpenAreTakenOverByTheNextProcess) {
  for (const char* w : {"r0", "r1", "r2", "r3"}) Join(w);
  const int64_t hung = AddRule("hung", "hung", R"({"factor":3,"min_minutes":0.5})", "ERROR");
  for (const char* w : {"r1", "r2", "r3"}) {
    ASSERT_TRUE(store_
                    ->RaiseAlert(store::AlertRaise{.entity = "acme",
                                                   .project = "vision",
                                                   .run_id = "run1",
                                                   .writer_label = w,
                                                   .rule_id = hung,
                                                   .source = "rule",
                                                   .condition_key = "rule:" + std::to_string(hung),
                                                   .level = "ERROR",
                                                   .title = std::string("writer ") + w + " hung",
                                                   .now_ms = kNow})
                    .ok());
  }
  // r3 ended and its end was handled, but its alert was left open (the server died in between).
  ASSERT_TRUE(store_->FinishWriter(kRun, "r3", store::RunState::kFinished, 0, kNow).ok());
  ASSERT_TRUE(store_->MarkWriterEndHandled(kRun, "r3", kNow).ok());
  AlertEngine next(store_.get(), insight::StragglerOptions{});
  int64_t now = kNow + 1000;
  next.Tick(now);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].writer_label, "r2");
  EXPECT_EQ(open[1].writer_label, "r1");
  // The new process learns the job again: r0 and r1 advance, r2 advances once then stays at its
  // step while heartbeating: found again, so kept; r1 is not hung, so resolved after the hold.
  for (int64_t step = 0; step < 10; ++step, now += 1000) {
    for (const char* w : {"r0", "r1", "r2"}) {
      next.OnBatch(kRun, w, Batch("loss", step, {1.0}), {}, now);
    }
    next.Tick(now);
  }
  for (int64_t step = 10; now < kNow + 300'000; ++step, now += 1000) {
    for (const char* w : {"r0", "r1"}) {
      next.OnBatch(kRun, w, Batch("loss", step, {1.0}), {}, now);
    }
    next.OnHeartbeat(kRun, "r2", now);
    next.Tick(now);
    if (now < kNow + 200'000) {
      EXPECT_EQ(Alerts("open").size(), 2u) << now - kNow;
    }
  }
  open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].writer_label, "r2");
  EXPECT_GT(open[0].count, 1);  // bumped by the new process
  std::vector<store::AlertRecord> resolved = Alerts("resolved");
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_EQ(resolved[0].writer_label, "r3");  // newest id first: r3 was raised last
  EXPECT_EQ(*resolved[0].resolved_ms, kNow + 1000);
  EXPECT_EQ(resolved[1].writer_label, "r1");
  EXPECT_GE(*resolved[1].resolved_ms, kNow + 1000 + 240'000);
}

// A shared run whose primary never joined: its workers ended while it ran, the sweep ends it
// later (silent for the timeout). Its own alerts resolve then, as at any run's end, even one a
// restarted server took over and would otherwise keep for the rule's window.
TEST_F(AlertEngineTest, ARunTheSweepEndsAsOrphanedResolvesItsOwnAlerts) {
  for (const char* w : {"rank1", "rank2"}) {
    ASSERT_TRUE(
        store_
            ->JoinWriter(
                kRun, store::WriterJoin{.label = w, .primary = false, .update_finish_state = false})
            .ok());
  }
  const int64_t hung = AddRule("hung", "hung", R"({"factor":3,"min_minutes":30})", "ERROR");
  ASSERT_TRUE(store_
                  ->RaiseAlert(store::AlertRaise{.entity = "acme",
                                                 .project = "vision",
                                                 .run_id = "run1",
                                                 .writer_label = "",
                                                 .rule_id = hung,
                                                 .source = "rule",
                                                 .condition_key = "rule:" + std::to_string(hung),
                                                 .level = "ERROR",
                                                 .title = "run run1 hung",
                                                 .now_ms = kNow})
                  .ok());
  engine_->Tick(kNow + 1000);  // taken over: its run runs
  End("rank1", store::RunState::kFinished, 0, kNow + 2000);
  End("rank2", store::RunState::kFailed, 1, kNow + 3000);
  auto run = store_->GetRun(kRun);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->state, store::RunState::kRunning);  // workers never end a run by themselves
  ASSERT_EQ(Alerts("open").size(), 2u);              // run1 hung, rank2 failed
  Crash(kNow + 4000);
  run = store_->GetRun(kRun);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, store::RunState::kFailed);
  std::vector<store::AlertRecord> open = Alerts("open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].title, "writer rank2 failed");  // evidence of what happened: stays
  std::vector<store::AlertRecord> resolved = Alerts("resolved");
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].title, "run run1 hung");
  EXPECT_EQ(*resolved[0].resolved_ms, kNow + 4000);
}

// A stale_metric alert taken over is watched from its last point: still stale, it stays open.
TEST_F(AlertEngineTest, AStaleMetricAlertTakenOverStaysOpenWhileTheKeyStaysStale) {
  Join("w");
  AddRule("eval stale", "stale_metric", R"({"key":"eval/*","minutes":1})");
  Send("w", Batch("eval/acc", 0, {0.5}), kNow);
  engine_->OnHeartbeat(kRun, "w", kNow + 70'000);
  engine_->Tick(kNow + 70'000);
  ASSERT_EQ(Alerts("open").size(), 1u);
  AlertEngine next(store_.get(), insight::StragglerOptions{});
  for (int64_t now = kNow + 80'000; now < kNow + 600'000; now += 10'000) {
    next.OnHeartbeat(kRun, "w", now);
    next.Tick(now);
  }
  ASSERT_EQ(Alerts("open").size(), 1u);
  // Its next point resolves it.
  next.OnBatch(kRun, "w", Batch("eval/acc", 1, {0.6}), {}, kNow + 600'000);
  next.Tick(kNow + 600'000);
  EXPECT_TRUE(Alerts("open").empty());
}

// The rules cannot be read at a tick (a database hiccup): what is open stays open.
TEST_F(AlertEngineTest, ARulesReadErrorKeepsTickAlertsOpen) {
  AddRule("eval stale", "stale_metric", R"({"key":"eval/*","minutes":1})");
  Send("w", Batch("eval/acc", 0, {0.5}), kNow);
  engine_->OnHeartbeat(kRun, "w", kNow + 70'000);
  engine_->Tick(kNow + 70'000);
  ASSERT_EQ(Alerts("open").size(), 1u);
  ASSERT_TRUE(Sql("ALTER TABLE alert_rules RENAME TO alert_rules_away"));
  engine_->OnHeartbeat(kRun, "w", kNow + 110'000);
  engine_->Tick(kNow + 110'000);  // the cached rules are 40 s old: read again, and that fails
  EXPECT_GT(engine_->errors(), 0);
  ASSERT_TRUE(Sql("ALTER TABLE alert_rules_away RENAME TO alert_rules"));
  EXPECT_EQ(Alerts("open").size(), 1u);
  EXPECT_TRUE(Alerts("resolved").empty());
  engine_->OnHeartbeat(kRun, "w", kNow + 120'000);
  engine_->Tick(kNow + 120'000);
  EXPECT_EQ(Alerts("open").size(), 1u);
  EXPECT_EQ(store_->ListAlertEvents(0, 100)->size(), 1u);  // no resolve and re-open
}

// Two servers behind a load balancer: the NaN alert one opened is resolved by the other when the
// writer's next batch there is finite (what a server remembers of a writer is at most 30 s old).
TEST_F(AlertEngineTest, AMetricAlertOpenedByAnotherServerIsResolvedByThisOne) {
  AlertEngine other(store_.get(), insight::StragglerOptions{});
  Send("w", Batch("loss", 0, {1.0}), kNow);  // this server has seen the writer: nothing open
  other.OnBatch(kRun, "w", Batch("loss", 1, {std::nan("")}), {}, kNow + 1000);
  ASSERT_EQ(Alerts("open").size(), 1u);
  Send("w", Batch("loss", 2, {1.0}), kNow + 2000);
  EXPECT_EQ(Alerts("open").size(), 1u);
  Send("w", Batch("loss", 3, {1.0}), kNow + 2000 + AlertEngine::kRulesTtlMs);
  EXPECT_TRUE(Alerts("open").empty());
}

}  // namespace
}  // namespace cohort::alerts
