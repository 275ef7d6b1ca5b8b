// Conformance cases for the bootstrap key (CreateFirstApiKey) and batch retention
// (PruneBatches).
#include <atomic>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace cohort::store
