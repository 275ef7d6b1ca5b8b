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

TEST(RunIngestCacheTest, MediaBytesLoadOnceThenMoveAndComeBackWhenNotCommitted) {
  RunIngestCache cache;
  EXPECT_FALSE(cache.MediaBytes(1).has_value());
  RunIngestCache::Note unloaded{.run_pk = 1};
  cache.AddMediaBytes(1, 5, &unloaded);  // not loaded: nothing to move
  EXPECT_FALSE(unloaded.media.has_value());
  EXPECT_EQ(cache.LoadMediaBytes(1, 100), 100);
  EXPECT_EQ(cache.LoadMediaBytes(1, 90), 100);  // another call loaded it first
  RunIngestCache::Note a{.run_pk = 1}, b{.run_pk = 1};
  cache.AddMediaBytes(1, 10, &a);
  cache.AddMediaBytes(1, 7, &b);
  EXPECT_EQ(cache.MediaBytes(1), 117);
  cache.Settle(&a, /*committed=*/true);
  cache.Settle(&b, /*committed=*/false);
  EXPECT_EQ(cache.MediaBytes(1), 110);
  // A total dropped and loaded again (from the table) is not moved back by an older note.
  RunIngestCache::Note old{.run_pk = 1};
  cache.AddMediaBytes(1, 3, &old);
  cache.Forget(1);
  EXPECT_EQ(cache.LoadMediaBytes(1, 110), 110);
  cache.Settle(&old, /*committed=*/false);
  EXPECT_EQ(cache.MediaBytes(1), 110);
  cache.Clear();
  EXPECT_FALSE(cache.MediaBytes(1).has_value());
}

TEST(RunIngestCacheTest, TooManyRunsStartOver) {
  RunIngestCache cache;
  for (int64_t run = 1; run <= int64_t(RunIngestCache::kMaxRuns); ++run) {
    cache.LoadMediaBytes(run, run);
  }
  EXPECT_EQ(cache.MediaBytes(1), 1);
  cache.LoadMediaBytes(int64_t(RunIngestCache::kMaxRuns) + 1, 0);
  EXPECT_FALSE(cache.MediaBytes(1).has_value());
}

}  // namespace
}  // namespace cohort::store
