// Conformance cases for the store dump (store.h "dump"): a store exported and imported into a
// fresh store of the same backend answers every read the same, keeps exactly-once for retried
// batches, continues numbering after the imported keys, and importing twice stores once. The
// alert tables go SQLite -> this backend -> SQLite (for PostgreSQL, across engines both ways).
#include <cmath>
#include <cstring>

#include "core/sha256.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_conformance.h"
#include "store/temp_dir_for_test.h"

namespace cohort::store {
namespace {

// Fills `s` with one of everything a dump carries.
void Populate(Store& s, const RunRef& ref) {
  RunUpsert u{.ref = ref};
  u.name = "resnet";
  u.group = "sweep";
  u.tags = std::vector<std::string>{"a", "b"};
  u.config_json = R"({"lr":0.1,"layers":[1,2]})";
  ASSERT_TRUE(s.UpsertRun(u).ok());
  ASSERT_TRUE(s.PatchRun(ref, RunPatch{.summary_json = R"({"acc":0.5})"}).ok());
  ASSERT_TRUE(s.JoinWriter(ref, WriterJoin{.label = "rank_0", .host = "h0", .pid = 7}).ok());
  ASSERT_TRUE(s.JoinWriter(ref, WriterJoin{.label = "rank_1", .primary = false}).ok());
  for (int64_t seq = 1; seq <= 3; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < 40; ++i) {
      const double v = i == 7 ? std::nan("") : std::sin(double(seq * 40 + i));
      b.AddHistoryRow(kAssignStep, 1000 + i, {{"loss", v}, {"acc", -0.0}});
    }
    b.AddSystemRow(5, {{"gpu.0.temp", 61.5}});
    b.AddConsole(ConsoleLine{.time_ms = 9, .text = "line " + std::to_string(seq)});
    IngestBatch batch = b.Finish();
    if (seq == 3) batch.ordered_stream = "agent-0";  // kept as its stream's highest, no record
    ASSERT_TRUE(s.Ingest(ref, "rank_0", batch, 100 + seq).ok());
  }
  IngestBatch positioned{.positions = {StreamPosition{"out", 0, 2}}};
  positioned.console.push_back(
      ConsoleLine{.time_ms = 11, .stream = "stderr", .text = "e0", .line = 0});
  ASSERT_TRUE(s.Ingest(ref, "rank_1", positioned, 200).ok());
  ASSERT_TRUE(s.FinishWriter(ref, "rank_1", RunState::kFinished, 0, 300).ok());
  std::string blob("bin\0ary", 7);
  ASSERT_TRUE(s.PutRunFile(ref, RunFile{.name = "config.yaml",
                                        .content_type = "text/yaml",
                                        .size = int64_t(blob.size()),
                                        .updated_ms = 5,
                                        .data = blob})
                  .ok());
  ASSERT_TRUE(s.CreateView(ViewRecord{.entity = ref.entity,
                                      .project = ref.project,
                                      .name = "v1",
                                      .spec_json = R"({"sort":"name"})"})
                  .ok());
  ASSERT_TRUE(s.CreateApiKey(ApiKeyRecord{.entity = ref.entity,
                                          .name = "ci",
                                          .role = KeyRole::kAdmin,
                                          .hash = "ab12",
                                          .prefix = "ck_"})
                  .ok());
  // Two versions of a checkpoint (a blob and a reference), an alias, a use.
  const std::string sha = Sha256::Hex("weights");
  ASSERT_TRUE(s.RecordBlob(ref.entity, sha, 7, 50, "").ok());
  for (const char* etag : {"e1", "e2"}) {
    ArtifactCommit c{.entity = ref.entity, .project = ref.project, .name = "ckpt", .type = "model"};
    c.run_id = ref.run_id;
    c.writer = "rank_0";
    c.aliases = {"best"};
    c.files = {ArtifactFile{.path = "w.pt", .sha256 = sha, .size = 7},
               ArtifactFile{.path = "data", .ref = "s3://b/k", .ref_digest = etag}};
    ASSERT_TRUE(s.CommitArtifact(c).ok());
  }
  ASSERT_TRUE(s.UseArtifact(ref.project, "ckpt", "v0", ref, "rank_1", 60).ok());
}

Result<int64_t> CopyInto(Store& from, Store& to, const DumpHeader& header, size_t batch = 7) {
  std::vector<DumpRecord> pending;
  int64_t stored = 0;
  auto flush = [&]() -> Status {
    COHORT_ASSIGN_OR_RETURN(int64_t n, to.Import(pending, header));
    stored += n;
    pending.clear();
    return Status::Ok();
  };
  COHORT_RETURN_IF_ERROR(from.Export([&](const DumpRecord& rec) -> Status {
    pending.push_back(rec);
    return pending.size() >= batch ? flush() : Status::Ok();
  }));
  COHORT_RETURN_IF_ERROR(flush());
  COHORT_RETURN_IF_ERROR(to.FinishImport());
  return stored;
}

// Bitwise comparison of points (NaN, -0.0 included).
void ExpectSameHistory(Store& a, Store& b, const HistoryQuery& q) {
  auto ha = a.QueryHistory(q);
  auto hb = b.QueryHistory(q);
  ASSERT_TRUE(ha.ok() && hb.ok());
  ASSERT_EQ(ha->size(), hb->size());
  for (size_t i = 0; i < ha->size(); ++i) {
    const SeriesData& x = (*ha)[i];
    const SeriesData& y = (*hb)[i];
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.writer, y.writer);
    ASSERT_EQ(x.points.size(), y.points.size());
    for (size_t j = 0; j < x.points.size(); ++j) {
      EXPECT_EQ(x.points[j].step, y.points[j].step);
      EXPECT_EQ(x.points[j].time_ms, y.points[j].time_ms);
      EXPECT_EQ(std::memcmp(&x.points[j].value, &y.points[j].value, 8), 0);
    }
    ASSERT_EQ(x.buckets.size(), y.buckets.size());
    for (size_t j = 0; j < x.buckets.size(); ++j) {
      EXPECT_EQ(x.buckets[j].count, y.buckets[j].count);
      EXPECT_EQ(x.buckets[j].nan_count, y.buckets[j].nan_count);
      EXPECT_EQ(x.buckets[j].min, y.buckets[j].min);
      EXPECT_EQ(x.buckets[j].max, y.buckets[j].max);
      EXPECT_EQ(x.buckets[j].step_min, y.buckets[j].step_min);
    }
  }
}

TEST_P(StoreConformanceTest, DumpRoundTripKeepsEveryRead) {
  const RunRef ref = Ref("run1");
  Populate(store(), ref);
  auto target = GetParam().make_target();
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, target->Open());
  const DumpHeader header{.source = GetParam().name == "postgres" ? "postgres" : "sqlite"};
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t stored, CopyInto(store(), *copy, header));
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts src_counts, store().CountRows());
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts dst_counts, copy->CountRows());
  EXPECT_EQ(src_counts, dst_counts);
  int64_t total = 0;
  for (const auto& [name, n] : src_counts) total += n;
  EXPECT_EQ(stored, total);
  EXPECT_GT(src_counts["chunks"], 0);
  EXPECT_EQ(src_counts["batches"], 2);          // rank_0's seqs 1 and 2
  EXPECT_EQ(src_counts["ordered_streams"], 1);  // its ordered seq 3

  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord ra, store().GetRun(ref));
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord rb, copy->GetRun(ref));
  EXPECT_EQ(ra.name, rb.name);
  EXPECT_EQ(ra.group, rb.group);
  EXPECT_EQ(ra.tags, rb.tags);
  EXPECT_EQ(ra.config_json, rb.config_json);
  EXPECT_EQ(ra.summary_json, rb.summary_json);
  EXPECT_EQ(ra.state, rb.state);
  EXPECT_EQ(ra.created_ms, rb.created_ms);
  EXPECT_EQ(ra.writer_count, rb.writer_count);

  COHORT_ASSERT_OK_AND_ASSIGN(auto wa, store().ListWriters(ref));
  COHORT_ASSERT_OK_AND_ASSIGN(auto wb, copy->ListWriters(ref));
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].label, wb[i].label);
    EXPECT_EQ(wa[i].state, wb[i].state);
    EXPECT_EQ(wa[i].next_step, wb[i].next_step);
    EXPECT_EQ(wa[i].last_seq, wb[i].last_seq);
  }

  ExpectSameHistory(store(), *copy, HistoryQuery{.run = ref});
  ExpectSameHistory(store(), *copy, HistoryQuery{.run = ref, .keys = {"system/gpu.0.temp"}});
  ExpectSameHistory(store(), *copy, HistoryQuery{.run = ref, .series = {.buckets = 10}});

  COHORT_ASSERT_OK_AND_ASSIGN(auto ca, store().QueryConsole(ConsoleQuery{.run = ref}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto cb, copy->QueryConsole(ConsoleQuery{.run = ref}));
  ASSERT_EQ(ca.size(), 4u);
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i) {
    EXPECT_EQ(ca[i].text, cb[i].text);
    EXPECT_EQ(ca[i].label, cb[i].label);
    EXPECT_EQ(ca[i].stream, cb[i].stream);
  }

  COHORT_ASSERT_OK_AND_ASSIGN(RunFile fb, copy->GetRunFile(ref, "config.yaml"));
  EXPECT_EQ(fb.data, std::string("bin\0ary", 7));
  EXPECT_EQ(fb.content_type, "text/yaml");
  COHORT_ASSERT_OK_AND_ASSIGN(auto views, copy->ListViews(ref.entity, ref.project));
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].spec_json, R"({"sort":"name"})");
  COHORT_ASSERT_OK_AND_ASSIGN(ApiKeyRecord key, copy->FindApiKey("ab12"));
  EXPECT_EQ(key.role, KeyRole::kAdmin);
  COHORT_ASSERT_OK_AND_ASSIGN(auto positions, copy->ListStreamPositions(ref));
  EXPECT_EQ(positions["rank_1"]["out"], 2);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion best,
                              copy->GetArtifactVersion(ref.entity, ref.project, "ckpt", "best"));
  EXPECT_EQ(best.index, 1);
  EXPECT_EQ(best.aliases, (std::vector<std::string>{"best", "latest"}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto files, copy->ListArtifactFiles(best));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].ref_digest, "e2");
  EXPECT_EQ(files[1].sha256, Sha256::Hex("weights"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto used, copy->ListRunArtifacts(ref));
  EXPECT_EQ(used.size(), 3u);  // v0 and v1 logged, v0 used
  COHORT_ASSERT_OK_AND_ASSIGN(auto held, copy->HeldBlobs(ref.entity, {Sha256::Hex("weights")}));
  EXPECT_EQ(held.size(), 1u);
  // Keys continue past the imported ones: the next version is v2.
  ArtifactCommit next_version{.entity = ref.entity, .project = ref.project, .name = "ckpt",
                              .type = "model"};
  next_version.files = {ArtifactFile{.path = "w.pt", .sha256 = Sha256::Hex("weights"), .size = 7}};
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged v2, copy->CommitArtifact(next_version));
  EXPECT_EQ(v2.version.index, 2);

  // Exactly-once survives: retried batches (a recorded one, an ordered one) are duplicates; the
  // next one is stored.
  for (int64_t seq : {2, 3}) {
    IngestBatchBuilder retry_rows(seq);
    retry_rows.AddHistoryRow(kAssignStep, 1, {{"loss", 1.0}});
    IngestBatch retry = retry_rows.Finish();
    if (seq == 3) retry.ordered_stream = "agent-0";
    COHORT_ASSERT_OK_AND_ASSIGN(IngestResult dup, copy->Ingest(ref, "rank_0", retry, 400));
    EXPECT_TRUE(dup.duplicate) << seq;
  }
  IngestBatchBuilder next_rows(4);
  next_rows.AddHistoryRow(kAssignStep, 1, {{"loss", 1.0}});
  next_rows.AddConsole(ConsoleLine{.time_ms = 12, .text = "after"});
  const IngestBatch next = next_rows.Finish();
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult fresh, copy->Ingest(ref, "rank_0", next, 401));
  EXPECT_FALSE(fresh.duplicate);
  EXPECT_EQ(fresh.next_step, 121);
  COHORT_ASSERT_OK_AND_ASSIGN(auto after, copy->QueryConsole(ConsoleQuery{.run = ref}));
  ASSERT_EQ(after.size(), 5u);
  EXPECT_EQ(after.back().text, "after");
  EXPECT_GT(after.back().id, after[3].id);

  // New keys continue after the imported ones.
  RunUpsert u2{.ref = Ref("run2")};
  COHORT_ASSERT_OK_AND_ASSIGN(auto run2, copy->UpsertRun(u2));
  EXPECT_GT(run2.first.pk, rb.pk);
  COHORT_ASSERT_OK(
      copy->CreateView(ViewRecord{.entity = ref.entity, .project = ref.project, .name = "v2"})
          .status());
}

// Fills `s` with alert state of project acme/vision: the defaults installed with one deleted, a
// disabled custom rule, alerts open / resolved / acked, their events, two webhooks (with secrets,
// one disabled), deliveries (one delivered, one pending) and a cursor short of the last event.
void PopulateAlerts(Store& s) {
  const std::string e = "acme", p = "vision";
  ASSERT_TRUE(s.UpsertRun(RunUpsert{.ref = RunRef{e, p, "run1"}}).ok());  // alerts need their run
  const std::vector<AlertRule> defaults = {
      AlertRule{.name = "nan", .kind = "nan_loss", .level = "ERROR", .builtin = true},
      AlertRule{.name = "stalled", .kind = "stalled", .spec_json = R"({"minutes":10})",
                .builtin = true}};
  COHORT_ASSERT_OK_AND_ASSIGN(bool installed, s.InstallDefaultAlertRules(e, p, defaults, 10));
  ASSERT_TRUE(installed);
  COHORT_ASSERT_OK_AND_ASSIGN(auto rules, s.ListAlertRules(e, p));
  ASSERT_EQ(rules.size(), 2u);
  const int64_t deleted = rules[0].name == "stalled" ? rules[0].id : rules[1].id;
  const int64_t kept = deleted == rules[0].id ? rules[1].id : rules[0].id;  // "nan", enabled
  COHORT_ASSERT_OK(s.DeleteAlertRule(e, p, deleted));
  COHORT_ASSERT_OK(s.CreateAlertRule(AlertRule{.entity = e,
                                               .project = p,
                                               .name = "acc drop",
                                               .kind = "threshold",
                                               .spec_json = R"({"key":"acc"})",
                                               .level = "INFO",
                                               .enabled = false,
                                               .created_ms = 11,
                                               .updated_ms = 12})
                       .status());
  AlertRaise raise{.entity = e,
                   .project = p,
                   .run_id = "run1",
                   .writer_label = "rank_0",
                   .rule_id = kept,
                   .source = "rule",
                   .condition_key = "rule:acc",
                   .level = "ERROR",
                   .title = "acc dropped",
                   .text = "below 0.5",
                   .evidence_json = R"({"acc":0.4})",
                   .now_ms = 20};
  COHORT_ASSERT_OK_AND_ASSIGN(auto first, s.RaiseAlert(raise));
  raise.now_ms = 21;
  ASSERT_TRUE(s.RaiseAlert(raise).ok());  // count 2
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto code, s.RaiseAlert(AlertRaise{.entity = e, .project = p, .run_id = "run1",
                                         .source = "code", .condition_key = "code:oom",
                                         .title = "oom", .now_ms = 22}));
  COHORT_ASSERT_OK_AND_ASSIGN(bool resolved,
                              s.ResolveAlert(e, p, "run1", "", "code:oom", 23));
  ASSERT_TRUE(resolved);
  ASSERT_TRUE(s.AckAlert(e, p, first.first.id, "alice", 24).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(
      WebhookRecord ops, s.CreateWebhook(WebhookRecord{.entity = e, .project = p, .name = "ops",
                                                       .url = "https://example.com/h",
                                                       .format = "generic", .secret = "s3cret",
                                                       .min_level = "WARN", .created_ms = 5}));
  ASSERT_TRUE(s.CreateWebhook(WebhookRecord{.entity = e, .project = p, .name = "chat",
                                            .url = "https://chat.example.com/x",
                                            .format = "slack", .min_level = "ERROR",
                                            .enabled = false, .created_ms = 6})
                  .ok());
  COHORT_ASSERT_OK_AND_ASSIGN(auto events, s.ListAlertEvents(0, 100));
  ASSERT_EQ(events.size(), 3u);  // opened, opened, resolved
  // Fanned out up to the second event; the third is past the cursor.
  std::vector<DeliveryIntent> intents;
  for (int i = 0; i < 2; ++i) {
    intents.push_back(DeliveryIntent{.webhook_id = ops.id, .entity = e, .project = p,
                                     .event_id = events[i].id, .alert_id = events[i].alert_id,
                                     .event_kind = events[i].kind, .now_ms = 30});
  }
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t added, s.EnqueueDeliveries(intents, events[1].id));
  ASSERT_EQ(added, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto claimed, s.ClaimDeliveries("server-a", 31, 1000, 1));
  ASSERT_EQ(claimed.size(), 1u);
  COHORT_ASSERT_OK_AND_ASSIGN(
      bool finished,
      s.FinishDelivery(claimed[0].id, "server-a",
                       DeliveryAttempt{.delivered = true, .status = 204, .now_ms = 32}));
  ASSERT_TRUE(finished);
  (void)code;
}

void ExpectSameAlerts(Store& a, Store& b) {
  const std::string e = "acme", p = "vision";
  COHORT_ASSERT_OK_AND_ASSIGN(auto ra, a.ListAlertRules(e, p));
  COHORT_ASSERT_OK_AND_ASSIGN(auto rb, b.ListAlertRules(e, p));
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].id, rb[i].id);
    EXPECT_EQ(ra[i].name, rb[i].name);
    EXPECT_EQ(ra[i].kind, rb[i].kind);
    EXPECT_EQ(ra[i].spec_json, rb[i].spec_json);
    EXPECT_EQ(ra[i].level, rb[i].level);
    EXPECT_EQ(ra[i].enabled, rb[i].enabled);
    EXPECT_EQ(ra[i].builtin, rb[i].builtin);
    EXPECT_EQ(ra[i].created_ms, rb[i].created_ms);
    EXPECT_EQ(ra[i].updated_ms, rb[i].updated_ms);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto aa, a.ListAlerts(AlertQuery{.entity = e, .project = p}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto ab, b.ListAlerts(AlertQuery{.entity = e, .project = p}));
  ASSERT_EQ(aa.size(), ab.size());
  for (size_t i = 0; i < aa.size(); ++i) {
    EXPECT_EQ(aa[i].id, ab[i].id);
    EXPECT_EQ(aa[i].run_id, ab[i].run_id);
    EXPECT_EQ(aa[i].writer_label, ab[i].writer_label);
    EXPECT_EQ(aa[i].rule_id, ab[i].rule_id);
    EXPECT_EQ(aa[i].source, ab[i].source);
    EXPECT_EQ(aa[i].condition_key, ab[i].condition_key);
    EXPECT_EQ(aa[i].level, ab[i].level);
    EXPECT_EQ(aa[i].title, ab[i].title);
    EXPECT_EQ(aa[i].text, ab[i].text);
    EXPECT_EQ(aa[i].evidence_json, ab[i].evidence_json);
    EXPECT_EQ(aa[i].state, ab[i].state);
    EXPECT_EQ(aa[i].opened_ms, ab[i].opened_ms);
    EXPECT_EQ(aa[i].resolved_ms, ab[i].resolved_ms);
    EXPECT_EQ(aa[i].acked_ms, ab[i].acked_ms);
    EXPECT_EQ(aa[i].acked_by, ab[i].acked_by);
    EXPECT_EQ(aa[i].last_seen_ms, ab[i].last_seen_ms);
    EXPECT_EQ(aa[i].count, ab[i].count);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto ea, a.ListAlertEvents(0, 100));
  COHORT_ASSERT_OK_AND_ASSIGN(auto eb, b.ListAlertEvents(0, 100));
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) {
    EXPECT_EQ(ea[i].id, eb[i].id);
    EXPECT_EQ(ea[i].alert_id, eb[i].alert_id);
    EXPECT_EQ(ea[i].kind, eb[i].kind);
    EXPECT_EQ(ea[i].created_ms, eb[i].created_ms);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto wa, a.ListWebhooks(e, p));
  COHORT_ASSERT_OK_AND_ASSIGN(auto wb, b.ListWebhooks(e, p));
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].id, wb[i].id);
    EXPECT_EQ(wa[i].name, wb[i].name);
    EXPECT_EQ(wa[i].url, wb[i].url);
    EXPECT_EQ(wa[i].format, wb[i].format);
    EXPECT_EQ(wa[i].secret, wb[i].secret);
    EXPECT_EQ(wa[i].min_level, wb[i].min_level);
    EXPECT_EQ(wa[i].enabled, wb[i].enabled);
    EXPECT_EQ(wa[i].created_ms, wb[i].created_ms);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto da, a.ListProjectDeliveries(e, p, std::nullopt, 100));
  COHORT_ASSERT_OK_AND_ASSIGN(auto db, b.ListProjectDeliveries(e, p, std::nullopt, 100));
  ASSERT_EQ(da.size(), db.size());
  for (size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i].id, db[i].id);
    EXPECT_EQ(da[i].webhook_id, db[i].webhook_id);
    EXPECT_EQ(da[i].event_id, db[i].event_id);
    EXPECT_EQ(da[i].alert_id, db[i].alert_id);
    EXPECT_EQ(da[i].event_kind, db[i].event_kind);
    EXPECT_EQ(da[i].state, db[i].state);
    EXPECT_EQ(da[i].attempts, db[i].attempts);
    EXPECT_EQ(da[i].next_attempt_ms, db[i].next_attempt_ms);
    EXPECT_EQ(da[i].last_status, db[i].last_status);
    EXPECT_EQ(da[i].last_error, db[i].last_error);
    EXPECT_EQ(da[i].claimed_by, db[i].claimed_by);
    EXPECT_EQ(da[i].claim_until_ms, db[i].claim_until_ms);
    EXPECT_EQ(da[i].delivered_ms, db[i].delivered_ms);
    EXPECT_EQ(da[i].created_ms, db[i].created_ms);
  }
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t ca, a.GetDeliveryCursor());
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t cb, b.GetDeliveryCursor());
  EXPECT_EQ(ca, cb);
}

// SQLite -> store() (this backend, fresh) -> SQLite: rules (and which defaults were deleted),
// alerts with their acks, events, webhooks with their secrets, the delivery log and cursor.
TEST_P(StoreConformanceTest, DumpCarriesAlertsAndWebhooksAcrossEngines) {
  TempDir dir;
  COHORT_ASSERT_OK_AND_ASSIGN(auto source,
                              SqliteStore::Open(SqliteOptions{.path = dir.path() / "src.db"}));
  PopulateAlerts(*source);
  if (HasFatalFailure()) return;
  // A fresh store counts no rows (its delivery cursor at 0 is not one): `cohort import` and
  // `migrate` take it as empty.
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts fresh, store().CountRows());
  for (const auto& [name, n] : fresh) EXPECT_EQ(n, 0) << name;

  COHORT_ASSERT_OK_AND_ASSIGN(int64_t stored,
                              CopyInto(*source, store(), DumpHeader{.source = "sqlite"}));
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts src_counts, source->CountRows());
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts dst_counts, store().CountRows());
  EXPECT_EQ(src_counts, dst_counts);
  EXPECT_EQ(src_counts["alert_rules"], 2);
  EXPECT_EQ(src_counts["alert_rule_defaults"], 1);
  EXPECT_EQ(src_counts["alerts"], 2);
  EXPECT_EQ(src_counts["alert_events"], 3);
  EXPECT_EQ(src_counts["alert_webhooks"], 2);
  EXPECT_EQ(src_counts["alert_deliveries"], 2);
  EXPECT_EQ(src_counts["alert_delivery_cursor"], 1);
  int64_t total = 0;
  for (const auto& [name, n] : src_counts) total += n;
  EXPECT_EQ(stored, total);
  ExpectSameAlerts(*source, store());
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t again,
                              CopyInto(*source, store(), DumpHeader{.source = "sqlite"}, 3));
  EXPECT_EQ(again, 0);

  // And back into SQLite from this backend's dump.
  COHORT_ASSERT_OK_AND_ASSIGN(auto back,
                              SqliteStore::Open(SqliteOptions{.path = dir.path() / "back.db"}));
  const DumpHeader from_here{.source = GetParam().name == "postgres" ? "postgres" : "sqlite"};
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t back_stored, CopyInto(store(), *back, from_here));
  EXPECT_EQ(back_stored, total);
  ExpectSameAlerts(*source, *back);

  // The deleted default stays deleted: the project's defaults count as installed.
  const std::vector<AlertRule> defaults = {
      AlertRule{.name = "stalled", .kind = "stalled", .builtin = true}};
  COHORT_ASSERT_OK_AND_ASSIGN(bool reinstalled,
                              store().InstallDefaultAlertRules("acme", "vision", defaults, 50));
  EXPECT_FALSE(reinstalled);
  // The cursor came along: the dispatcher resumes after the second event, not from the first.
  COHORT_ASSERT_OK_AND_ASSIGN(auto events, store().ListAlertEvents(0, 100));
  ASSERT_EQ(events.size(), 3u);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t cursor, store().GetDeliveryCursor());
  EXPECT_EQ(cursor, events[1].id);
  COHORT_ASSERT_OK_AND_ASSIGN(auto pending, store().ListAlertEvents(cursor, 100));
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].kind, "resolved");

  // New ids continue above the imported ones (PostgreSQL: identity sequences moved).
  COHORT_ASSERT_OK_AND_ASSIGN(auto rules, store().ListAlertRules("acme", "vision"));
  COHORT_ASSERT_OK_AND_ASSIGN(
      AlertRule rule, store().CreateAlertRule(AlertRule{.entity = "acme", .project = "vision",
                                                        .name = "new", .kind = "threshold"}));
  for (const AlertRule& r : rules) EXPECT_GT(rule.id, r.id);
  MakeRun("run2");
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto raised, store().RaiseAlert(AlertRaise{.entity = "acme", .project = "vision",
                                                 .run_id = "run2", .source = "code",
                                                 .condition_key = "code:new", .title = "new",
                                                 .now_ms = 60}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto after, store().ListAlertEvents(0, 100));
  ASSERT_EQ(after.size(), 4u);
  EXPECT_GT(after.back().id, events.back().id);
  EXPECT_EQ(after.back().alert_id, raised.first.id);
  COHORT_ASSERT_OK_AND_ASSIGN(auto alerts,
                              store().ListAlerts(AlertQuery{.entity = "acme", .project = "vision"}));
  for (const AlertRecord& a : alerts) {
    if (a.id != raised.first.id) {
      EXPECT_GT(raised.first.id, a.id);
    }
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto hooks, store().ListWebhooks("acme", "vision"));
  COHORT_ASSERT_OK_AND_ASSIGN(
      WebhookRecord hook,
      store().CreateWebhook(WebhookRecord{.entity = "acme", .project = "vision", .name = "new",
                                          .url = "https://example.com/n", .format = "generic",
                                          .min_level = "INFO", .created_ms = 1}));
  for (const WebhookRecord& w : hooks) EXPECT_GT(hook.id, w.id);
  COHORT_ASSERT_OK_AND_ASSIGN(auto logged,
                              store().ListProjectDeliveries("acme", "vision", std::nullopt, 100));
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t added,
      store().EnqueueDeliveries({DeliveryIntent{.webhook_id = hook.id, .entity = "acme",
                                                .project = "vision", .event_id = after.back().id,
                                                .alert_id = raised.first.id,
                                                .event_kind = "opened", .now_ms = 61}},
                                after.back().id));
  EXPECT_EQ(added, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto relogged,
                              store().ListProjectDeliveries("acme", "vision", std::nullopt, 100));
  ASSERT_EQ(relogged.size(), logged.size() + 1);
  for (const DeliveryRecord& d : logged) EXPECT_GT(relogged[0].id, d.id);  // newest first
}

TEST_P(StoreConformanceTest, DumpImportedTwiceIsStoredOnce) {
  const RunRef ref = Ref("run1");
  Populate(store(), ref);
  auto target = GetParam().make_target();
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, target->Open());
  const DumpHeader header{.source = GetParam().name == "postgres" ? "postgres" : "sqlite"};
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t first, CopyInto(store(), *copy, header, 1000));
  EXPECT_GT(first, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t second, CopyInto(store(), *copy, header, 3));
  EXPECT_EQ(second, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts src, store().CountRows());
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts dst, copy->CountRows());
  EXPECT_EQ(src, dst);
}

TEST_P(StoreConformanceTest, DumpImportRejectsMalformedRowAndStoresNothing) {
  std::vector<DumpRecord> recs(2);
  recs[0].table = kDumpViews;
  recs[0].values = {int64_t{1},        std::string("e"), std::string("p"), std::string("n"),
                    std::string("{}"), int64_t{1},       int64_t{1}};
  recs[1].table = kDumpViews;
  recs[1].values = {int64_t{2}, std::string("e")};  // too few values
  auto r = store().Import(recs, DumpHeader{.source = "sqlite"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  COHORT_ASSERT_OK_AND_ASSIGN(auto views, store().ListViews("e", "p"));
  EXPECT_TRUE(views.empty());
}

}  // namespace
}  // namespace cohort::store
