// Conformance cases for the bootstrap key (CreateFirstApiKey), batch retention (PruneBatches)
// and the bounds every store keeps (the step counter, the size of run documents).
#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "store/record_json.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

int64_t PointCount(Store& store, const RunRef& ref) {
  auto hist = store.QueryHistory(HistoryQuery{.run = ref, .series = {.limit = 1000000}});
  if (!hist.ok()) return -1;
  int64_t n = 0;
  for (const SeriesData& s : *hist) n += int64_t(s.points.size());
  return n;
}

TEST_P(StoreConformanceTest, FirstApiKeyIsCreatedOnceAmongConcurrentCallers) {
  constexpr int kCallers = 8;
  std::atomic<int> created{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto r = store().CreateFirstApiKey(ApiKeyRecord{.entity = kEntity,
                                                      .name = "boot",
                                                      .role = KeyRole::kAdmin,
                                                      .hash = "boot-" + std::to_string(i)});
      if (!r.ok()) {
        ++failed;
      } else if (r->has_value()) {
        ++created;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(created.load(), 1);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t count, store().CountApiKeys());
  EXPECT_EQ(count, 1);

  // With only revoked keys left, a first key is created again.
  COHORT_ASSERT_OK_AND_ASSIGN(auto keys, store().ListApiKeys(kEntity));
  ASSERT_EQ(keys.size(), 1u);
  COHORT_ASSERT_OK(store().RevokeApiKey(kEntity, keys[0].id));
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto again, store().CreateFirstApiKey(ApiKeyRecord{.entity = kEntity, .hash = "later"}));
  ASSERT_TRUE(again.has_value());
  EXPECT_GT(again->id, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto third, store().CreateFirstApiKey(ApiKeyRecord{.entity = kEntity, .hash = "third"}));
  EXPECT_FALSE(third.has_value());
  EXPECT_EQ(store().FindApiKey("third").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, PrunedBatchRecordsStillRejectRetries) {
  MakeRun("run1");
  Join("run1", "w");
  // Batches 1..3 stored at times 100..300; 4 at 1000.
  for (int64_t seq = 1; seq <= 4; ++seq) {
    IngestBatch b = Rows(seq, "m", 10);
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b, seq == 4 ? 1000 : seq * 100).status());
  }
  ASSERT_EQ(PointCount(store(), Ref("run1")), 40);

  COHORT_ASSERT_OK_AND_ASSIGN(int64_t removed, store().PruneBatches(/*stored_before_ms=*/500));
  EXPECT_EQ(removed, 3);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t none, store().PruneBatches(500));
  EXPECT_EQ(none, 0);

  // Retries of pruned batches (at or below the pruned seq) and of the kept one are
  // acknowledged as duplicates and store nothing.
  for (int64_t seq : {1, 3, 4}) {
    IngestBatch b = Rows(seq, "m", 10);
    COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", b, 2000));
    EXPECT_TRUE(r.duplicate) << seq;
  }
  EXPECT_EQ(PointCount(store(), Ref("run1")), 40);

  // New batches are stored as before.
  IngestBatch next = Rows(5, "m", 10);
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", next, 2000));
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(PointCount(store(), Ref("run1")), 50);

  // Another writer's batches are unaffected by the first writer's pruned seq.
  Join("run1", "v", /*primary=*/false);
  IngestBatch other = Rows(2, "m", 10);
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult o, store().Ingest(Ref("run1"), "v", other, 2000));
  EXPECT_FALSE(o.duplicate);
  EXPECT_EQ(PointCount(store(), Ref("run1")), 60);
}

// An ordered batch (the agent's, IngestBatch::ordered_stream: every lower seq of its stream
// settled) leaves no record: its stream's highest seq per writer is kept instead. Retries of it
// and of the stream's lower seqs are duplicates; another stream of the same writer (a relaunched
// job's, `cohort sync` of two directories) keeps its own seqs, even lower ones; a record kept for
// an unordered batch (or its pruned mark) still names a duplicate; other writers are apart.
// Batches with a key the writer never had take PostgreSQL's path that reads the rows first.
TEST_P(StoreConformanceTest, OrderedBatchesKeepTheirStreamsHighestSeqInsteadOfARecord) {
  MakeRun("run1");
  Join("run1", "w");
  auto ingest = [&](const std::string& label, int64_t seq, const std::string& stream,
                    const std::string& key = "m") -> Result<IngestResult> {
    IngestBatch b = Rows(seq, key, 10);
    b.ordered_stream = stream;
    return store().Ingest(Ref("run1"), label, b, 100 * seq);
  };
  int64_t points = 0;
  auto expect_stored = [&](const std::string& label, int64_t seq, const std::string& stream,
                           const std::string& key = "m") {
    auto r = ingest(label, seq, stream, key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->duplicate) << label << " " << seq << " " << stream << " " << key;
    points += 10;
  };
  auto expect_duplicate = [&](const std::string& label, int64_t seq, const std::string& stream,
                              const std::string& key = "m") {
    auto r = ingest(label, seq, stream, key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->duplicate) << label << " " << seq << " " << stream << " " << key;
  };
  // Stream a (seqs 100..103) and stream b (10..13, a clock behind) interleaved, as `cohort sync`
  // of two directories of one writer sends them.
  for (int64_t i = 0; i < 4; ++i) {
    expect_stored("w", 100 + i, "a");
    expect_stored("w", 10 + i, "b", i == 2 ? "n" : "m");
  }
  EXPECT_EQ(PointCount(store(), Ref("run1")), points);
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t records, store().PruneBatches(int64_t{1} << 60));
  EXPECT_EQ(records, 0);  // nothing was recorded per batch

  // Retries of each stream's last and older seqs, also through the other path (a new key).
  for (const char* key : {"m", "never"}) {
    expect_duplicate("w", 103, "a", key);
    expect_duplicate("w", 101, "a", key);
    expect_duplicate("w", 13, "b", key);
    expect_duplicate("w", 10, "b", key);
    expect_duplicate("w", 11, "b", key);
  }
  // A third stream numbering below both (a relaunch whose clock is behind) is stored.
  expect_stored("w", 5, "c");
  expect_stored("w", 6, "c", "n");
  expect_duplicate("w", 5, "c");
  // Each stream goes on.
  expect_stored("w", 104, "a");
  expect_stored("w", 14, "b");
  EXPECT_EQ(PointCount(store(), Ref("run1")), points);

  // An unordered batch is recorded; a later ordered copy of it (an upgraded agent re-sending
  // what an older one sent) is a duplicate on either path, and so is an unordered retry.
  expect_stored("w", 50, "");
  expect_duplicate("w", 50, "a");
  expect_duplicate("w", 50, "b", "never");
  expect_duplicate("w", 50, "");

  // Another writer's streams are its own.
  Join("run1", "v", /*primary=*/false);
  expect_stored("v", 2, "a");
  expect_duplicate("v", 2, "a");
  EXPECT_EQ(PointCount(store(), Ref("run1")), points);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  for (const WriterRecord& w : writers) EXPECT_EQ(w.last_seq, w.label == "w" ? 104 : 2) << w.label;
  COHORT_ASSERT_OK_AND_ASSIGN(records, store().PruneBatches(int64_t{1} << 60));
  EXPECT_EQ(records, 1);  // seq 50's
  // Pruned, its seq is at or below the writer's pruned_seq: still a duplicate, either path.
  expect_duplicate("w", 50, "a");
  expect_duplicate("w", 50, "a", "never");
  EXPECT_EQ(PointCount(store(), Ref("run1")), points);
}

// Copies of one batch sent at once (a retry racing the first try, or two servers): one is
// stored, the others are duplicates, ordered or not.
TEST_P(StoreConformanceTest, ConcurrentCopiesOfABatchAreStoredOnce) {
  MakeRun("run1");
  Join("run1", "w");
  constexpr int kCopies = 4, kSeqs = 12;
  for (int seq = 1; seq <= kSeqs; ++seq) {
    std::atomic<int> stored{0}, failed{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kCopies; ++i) {
      threads.emplace_back([&, seq] {
        IngestBatch b = Rows(seq, seq % 3 == 0 ? "n" : "m", 10);
        b.ordered_stream = seq % 2 == 1 ? "s" : "";
        auto r = store().Ingest(Ref("run1"), "w", b, seq);
        if (!r.ok()) {
          ++failed;
        } else if (!r->duplicate) {
          ++stored;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed.load(), 0) << seq;
    EXPECT_EQ(stored.load(), 1) << seq;
  }
  EXPECT_EQ(PointCount(store(), Ref("run1")), 10 * kSeqs);
}

TEST_P(StoreConformanceTest, StepCounterNeverWrapsPastTheLargestStep) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder top_rows(1);
  top_rows.AddHistoryRow(kMax - 2, 1, {{"m", 1.0}});
  top_rows.AddHistoryRow(kAssignStep, 2, {{"m", 2.0}});  // kMax - 1
  const IngestBatch top = top_rows.Finish();
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult first, store().Ingest(Ref("run1"), "w", top, 10));
  EXPECT_EQ(first.next_step, kMax);
  // A row without a step now has none left: refused, naming the row, and nothing is stored.
  IngestBatchBuilder more_rows(2);
  more_rows.AddHistoryRow(5, 3, {{"m", 3.0}});
  more_rows.AddHistoryRow(kAssignStep, 4, {{"m", 4.0}});
  IngestBatch more = more_rows.Finish();
  auto refused = store().Ingest(Ref("run1"), "w", more, 20);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("history[1].step"), std::string::npos)
      << refused.status().message();
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1"), .series = {.limit = 100}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), 2u);
  EXPECT_EQ(hist[0].points[0].step, kMax - 2);
  EXPECT_EQ(hist[0].points[1].step, kMax - 1);
  // The refused batch can be sent again with explicit steps.
  more.history_step[1] = 6;
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", more, 30).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  EXPECT_EQ(writers[0].next_step, kMax);
  EXPECT_EQ(writers[0].last_seq, 2);
}

TEST_P(StoreConformanceTest, RunDocumentsAreBounded) {
  MakeRun("run1");
  const std::string big = "{\"blob\":\"" + std::string(kMaxRunDocumentBytes, 'x') + "\"}";
  auto created = store().UpsertRun(RunUpsert{.ref = Ref("run2"), .config_json = big});
  EXPECT_EQ(created.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(created.status().message().find("config:"), std::string::npos);
  EXPECT_EQ(store().GetRun(Ref("run2")).status().code(), StatusCode::kNotFound);
  auto patched = store().PatchRun(Ref("run1"), RunPatch{.summary_json = big});
  EXPECT_EQ(patched.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(patched.status().message().find("summary:"), std::string::npos);
  // Merging small patches into a document near the limit is refused too.
  const std::string half = "{\"a\":\"" + std::string(kMaxRunDocumentBytes / 2, 'a') + "\"}";
  COHORT_ASSERT_OK(store().PatchRun(Ref("run1"), RunPatch{.config_json = half}).status());
  const std::string other = "{\"b\":\"" + std::string(kMaxRunDocumentBytes / 2, 'b') + "\"}";
  EXPECT_EQ(store().PatchRun(Ref("run1"), RunPatch{.config_json = other}).status().code(),
            StatusCode::kPayloadTooLarge);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store().GetRun(Ref("run1")));
  EXPECT_EQ(run.config_json.find("\"b\""), std::string::npos);
  EXPECT_EQ(run.summary_json, "{}");
}

}  // namespace
}  // namespace cohort::store
