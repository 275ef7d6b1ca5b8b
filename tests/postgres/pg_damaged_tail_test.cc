// PostgreSQL: a damaged tail chunk does not block its writer (series::AbandonTail; the SQLite
// case is in src/store/sqlite/sqlite_store_test.cc).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pg_store_fixture.h"
#include "series/tail.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_store.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

// A tail chunk that no longer decodes is kept as it is (reads skip and name it) and the series
// goes on: the compaction that met it failed every later batch of the writer, and the seal at
// finish the writer's finish (as on SQLite: sqlite_store_test.cc).
TEST_F(PostgresStoreTest, ADamagedTailChunkIsKeptAndTheWriterGoesOnAndFinishes) {
  auto batch = [](int64_t seq) {
    IngestBatchBuilder b(seq);
    b.AddHistoryRow(seq, 1, {{"a", double(seq)}, {"b", double(seq)}});
    return b.Finish();
  };
  auto damage = [&](const std::string& key, bool due) {
    auto raw = Raw();
    ASSERT_NE(raw, nullptr);
    const std::string pk = "(SELECT pk FROM series WHERE key = '" + key + "')";
    COHORT_ASSERT_OK(
        raw->ExecScript("UPDATE chunks SET data = '\\x00'::bytea WHERE series_pk = " + pk +
                        " AND idx = (SELECT max(idx) FROM chunks WHERE series_pk = " + pk + ")"));
    if (due) {  // its tail due for compaction at the next batch (series/tail.h)
      COHORT_ASSERT_OK(raw->ExecScript(
          "UPDATE series SET tail_chunks = " + std::to_string(series::kMaxTailChunks) +
          " WHERE key = '" + key + "'"));
    }
  };
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
    ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
    ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
    ASSERT_TRUE(store->Ingest(Ref("run1"), "w", batch(1), 1).ok());
  }
  damage("b", /*due=*/true);
  {
    COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
    for (int64_t seq = 2; seq <= 4; ++seq) {
      auto stored = store->Ingest(Ref("run1"), "w", batch(seq), seq);
      ASSERT_TRUE(stored.ok()) << seq << ": " << stored.status().ToString();
    }
  }
  damage("a", /*due=*/false);  // met by the seal at finish
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  auto finished = store->FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 10);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store->QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 2u);
  std::vector<int64_t> a_steps, b_steps;
  for (const auto& p : hist[0].points) a_steps.push_back(p.step);
  for (const auto& p : hist[1].points) b_steps.push_back(p.step);
  EXPECT_EQ(b_steps, (std::vector<int64_t>{2, 3, 4}));  // only the damaged chunk's point is gone
  EXPECT_EQ(hist[1].damaged.size(), 1u);
  EXPECT_EQ(a_steps, (std::vector<int64_t>{1, 2, 3}));  // step 4's chunk was the damaged one
  EXPECT_EQ(hist[0].damaged.size(), 1u);
}

}  // namespace
}  // namespace cohort::store
