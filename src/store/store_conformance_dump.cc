// Conformance cases for the store dump (store.h "dump"): a store exported and imported into a
// fresh store of the same backend answers every read the same, keeps exactly-once for retried
// batches, continues numbering after the imported keys, and importing twice stores once.
#include <cmath>
#include <cstring>

#include "core/sha256.h"
#include "store/store_conformance.h"

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
    ASSERT_TRUE(s.Ingest(ref, "rank_0", b.Finish(), 100 + seq).ok());
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

  // Exactly-once survives: a retried batch is a duplicate; the next one is stored.
  IngestBatchBuilder retry_rows(3);
  retry_rows.AddHistoryRow(kAssignStep, 1, {{"loss", 1.0}});
  const IngestBatch retry = retry_rows.Finish();
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult dup, copy->Ingest(ref, "rank_0", retry, 400));
  EXPECT_TRUE(dup.duplicate);
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
