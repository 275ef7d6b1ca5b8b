#include "store/sql/run_ingest_cache.h"

#include <gtest/gtest.h>

namespace cohort::store {
namespace {

using Keys = std::vector<std::string>;

TEST(RunIngestCacheTest, KeysAreKnownOnceTheirBatchCommitted) {
  RunIngestCache cache;
  EXPECT_EQ(cache.UnknownKeys(1, {"a", "b"}), (Keys{"a", "b"}));
  RunIngestCache::Note failed{.run_pk = 1, .keys = {{"a", "histogram"}}};
  cache.Settle(&failed, /*committed=*/false);
  EXPECT_EQ(failed.run_pk, 0);
  EXPECT_EQ(cache.UnknownKeys(1, {"a", "b"}), (Keys{"a", "b"}));
  EXPECT_TRUE(cache.KnownTypes(1, {"a"}).empty());
  RunIngestCache::Note stored{.run_pk = 1, .keys = {{"a", "histogram"}, {"c", "image"}}};
  cache.Settle(&stored, /*committed=*/true);
  EXPECT_EQ(cache.UnknownKeys(1, {"a", "b"}), (Keys{"b"}));
  using Types = std::map<std::string, std::string>;
  EXPECT_EQ(cache.KnownTypes(1, {"a", "b", "c"}), (Types{{"a", "histogram"}, {"c", "image"}}));
  EXPECT_TRUE(cache.KnownTypes(2, {"a"}).empty());
  EXPECT_EQ(cache.UnknownKeys(2, {"a"}), (Keys{"a"}));  // per run
  cache.Forget(1);
  EXPECT_EQ(cache.UnknownKeys(1, {"a"}), (Keys{"a"}));
}

TEST(RunIngestCacheTest, ACallBegunBeforeItsRunWasForgottenSettlesNothing) {
  // A batch committed into run 1, then the run was deleted (Forget) before the batch settled:
  // on SQLite a new run may get pk 1, whose keys these are not.
  RunIngestCache cache;
  RunIngestCache::Note before{.keys = {{"h", "histogram"}}};
  cache.Begin(&before, 1);
  cache.Forget(1);
  cache.Settle(&before, /*committed=*/true);
  EXPECT_EQ(cache.UnknownKeys(1, {"h"}), (Keys{"h"}));
  EXPECT_TRUE(cache.KnownTypes(1, {"h"}).empty());
  RunIngestCache::Note cleared{.keys = {{"h", "histogram"}}};
  cache.Begin(&cleared, 1);
  cache.Clear();
  cache.Settle(&cleared, /*committed=*/true);
  EXPECT_EQ(cache.UnknownKeys(1, {"h"}), (Keys{"h"}));
  RunIngestCache::Note after{.keys = {{"h", "histogram"}}};  // begun after: settles
  cache.Begin(&after, 1);
  cache.Settle(&after, /*committed=*/true);
  EXPECT_TRUE(cache.UnknownKeys(1, {"h"}).empty());
}

TEST(RunIngestCacheTest, TooManyRunsStartOver) {
  RunIngestCache cache;
  auto know = [&](int64_t run) {
    RunIngestCache::Note n{.run_pk = run, .keys = {{"k", "image"}}};
    cache.Settle(&n, /*committed=*/true);
  };
  for (int64_t run = 1; run <= int64_t(RunIngestCache::kMaxRuns); ++run) know(run);
  EXPECT_TRUE(cache.UnknownKeys(1, {"k"}).empty());
  know(int64_t(RunIngestCache::kMaxRuns) + 1);
  EXPECT_EQ(cache.UnknownKeys(1, {"k"}), (Keys{"k"}));
  EXPECT_TRUE(cache.UnknownKeys(int64_t(RunIngestCache::kMaxRuns) + 1, {"k"}).empty());
  cache.Clear();
  EXPECT_EQ(cache.UnknownKeys(int64_t(RunIngestCache::kMaxRuns) + 1, {"k"}), (Keys{"k"}));
}

}  // namespace
}  // namespace cohort::store
