// PostgreSQL-specific behaviour of PostgresStore beyond the conformance suite: migrations under
// concurrent opens, URL options, the connection pool, retries, dead connections, and exactly-once
// ingest when two store instances (two servers) write for one writer at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "pg_environment.h"
#include "pg_store_fixture.h"
#include "series/chunk.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_pool.h"
#include "store/postgres/pg_store.h"
#include "store/sql/sql_schema.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

using pg::Conn;
using pg::Params;
using pg::PgResult;

// A batch of one history row of key "loss" (value 1) at the writer's next step.
IngestBatch OneRow(int64_t seq, int64_t time_ms) {
  IngestBatchBuilder b(seq);
  b.AddHistoryRow(kAssignStep, time_ms, {{"loss", 1.0}});
  return b.Finish();
}

// ---- migrations ----

TEST_F(PostgresStoreTest, OpenMigratesEmptyDatabaseToLatestVersion) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_version"), sql::LatestSchemaVersion());
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pg_tables WHERE tablename IN ('runs', 'writers', "
                     "'batches', 'series', 'chunks', 'console', 'views', 'api_keys', "
                     "'stream_positions', 'run_files')"),
            10);
  // Chunk blobs are bytea kept uncompressed ('e'xternal storage): they are compressed already.
  // So are its partitions' (chunks_tail: tail chunks, vacuumed every few thousand dead rows).
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pg_attribute WHERE attrelid IN ('chunks'::regclass, "
                     "'chunks_sealed'::regclass, 'chunks_tail'::regclass) AND attname = 'data' "
                     "AND attstorage = 'e' AND atttypid = 'bytea'::regtype"),
            3);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pg_class WHERE relname = 'chunks_tail' AND "
                     "'autovacuum_vacuum_scale_factor=0' = ANY(reloptions)"),
            1);
}

TEST_F(PostgresStoreTest, ConcurrentOpensApplyEachMigrationOnce) {
  constexpr int kServers = 6;
  std::vector<std::thread> threads;
  std::vector<Status> results(kServers);
  for (int i = 0; i < kServers; ++i) {
    threads.emplace_back([&, i] { results[i] = Open().status(); });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_version"), sql::LatestSchemaVersion());
}

TEST_F(PostgresStoreTest, DatabaseAtNewerSchemaVersionIsRefused) {
  ASSERT_TRUE(Open().ok());
  auto conn = Raw();
  ASSERT_NE(conn, nullptr);
  COHORT_ASSERT_OK(conn->ExecScript("UPDATE schema_version SET version = 999"));
  auto reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(reopened.status().message().find("999"), std::string::npos);
}

// ---- URL options ----

TEST(PostgresOptionsTest, StoreOptionsAreTakenOutAndTheRestGoesToLibpq) {
  COHORT_ASSERT_OK_AND_ASSIGN(
      pg::PostgresOptions o,
      pg::ParsePostgresUrl("postgresql://cohort:secret@db1:6543/tracker?sslmode=disable&"
                           "pool_size=32&pool_timeout_ms=250&read_hosts=r1:5433,r2"));
  EXPECT_EQ(o.pool_size, 32);
  EXPECT_EQ(o.read_pool_size, 32);
  EXPECT_EQ(o.pool_timeout.count(), 250);
  std::map<std::string, std::string> primary(o.conninfo.begin(), o.conninfo.end());
  EXPECT_EQ(primary["host"], "db1");
  EXPECT_EQ(primary["port"], "6543");
  EXPECT_EQ(primary["dbname"], "tracker");
  EXPECT_EQ(primary["user"], "cohort");
  EXPECT_EQ(primary["password"], "secret");
  EXPECT_EQ(primary["sslmode"], "disable");
  EXPECT_EQ(primary["fallback_application_name"], "cohort");
  EXPECT_EQ(primary["keepalives_idle"], "30");  // a dead database noticed in about a minute
  EXPECT_EQ(primary["tcp_user_timeout"], "60000");
  EXPECT_FALSE(primary.contains("pool_size"));
  std::map<std::string, std::string> reads(o.read_conninfo.begin(), o.read_conninfo.end());
  EXPECT_EQ(reads["host"], "r1,r2");
  EXPECT_EQ(reads["port"], "5433,6543");
  EXPECT_EQ(reads["dbname"], "tracker");
  EXPECT_EQ(reads["password"], "secret");
  EXPECT_EQ(pg::DescribeConnInfo(o.conninfo).find("secret"), std::string::npos);
}

TEST(PostgresOptionsTest, KeepalivesGivenInTheUrlWin) {
  COHORT_ASSERT_OK_AND_ASSIGN(
      pg::PostgresOptions o,
      pg::ParsePostgresUrl("postgresql://h/db?keepalives_idle=5&tcp_user_timeout=0"));
  std::map<std::string, std::string> info(o.conninfo.begin(), o.conninfo.end());
  EXPECT_EQ(info["keepalives_idle"], "5");
  EXPECT_EQ(info["tcp_user_timeout"], "0");
  EXPECT_EQ(info["keepalives_count"], "3");
}

TEST(PostgresOptionsTest, BadOptionsAreRejectedByName) {
  auto bad_pool = pg::ParsePostgresUrl("postgresql://h/db?pool_size=0");
  ASSERT_FALSE(bad_pool.ok());
  EXPECT_EQ(bad_pool.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_pool.status().message().find("pool_size"), std::string::npos);
  auto unknown = pg::ParsePostgresUrl("postgresql://h/db?colour=red");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("colour"), std::string::npos);
  EXPECT_FALSE(pg::ParsePostgresUrl("sqlite:///x.db").ok());
  EXPECT_FALSE(pg::ParsePostgresUrl("postgresql://h/db?read_hosts=r1:notaport").ok());
  auto bad_cache = pg::ParsePostgresUrl("postgresql://h/db?ingest_cache=maybe");
  ASSERT_FALSE(bad_cache.ok());
  EXPECT_NE(bad_cache.status().message().find("ingest_cache"), std::string::npos);
}

TEST_F(PostgresStoreTest, OpenStoreRoutesPostgresUrls) {
  for (const char* scheme : {"postgresql://", "postgres://"}) {
    std::string url = Url();
    url.replace(0, url.find("://") + 3, scheme);
    auto store = OpenStore(url);
    ASSERT_TRUE(store.ok()) << scheme << " " << store.status().ToString();
    EXPECT_NE(dynamic_cast<PostgresStore*>(store->get()), nullptr);
  }
}

TEST_F(PostgresStoreTest, UnreachableServerIsUnavailableNamingTheHost) {
  auto store = PostgresStore::OpenUrl("postgresql://nobody@/x?host=/nonexistent-dir&port=1");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("/nonexistent-dir"), std::string::npos);
}

// ---- the pool ----

TEST_F(PostgresStoreTest, PoolNeverOpensMoreThanPoolSizeConnections) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("pool_size=2"));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  std::atomic<int> failures{0}, most_open{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (t % 2 == 0) {
          const IngestBatch b = OneRow(t * 100 + i + 1, 1);
          if (!store->Ingest(Ref("run1"), "w", b, 1).ok()) ++failures;
        } else if (!store->QueryHistory(HistoryQuery{.run = Ref("run1")}).ok()) {
          ++failures;
        }
        int open = store->primary_pool()->open();
        int seen = most_open.load();
        while (open > seen && !most_open.compare_exchange_weak(seen, open)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(most_open.load(), 2);
  EXPECT_LE(QueryInt("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND application_name = 'cohort'"),
            2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store->ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].count, 40);
}

TEST_F(PostgresStoreTest, ExhaustedPoolFailsAfterItsTimeout) {
  COHORT_ASSERT_OK_AND_ASSIGN(pg::PostgresOptions o, pg::ParsePostgresUrl(Url()));
  pg::Pool pool(o.conninfo, 1, std::chrono::milliseconds(100));
  COHORT_ASSERT_OK_AND_ASSIGN(pg::Pool::Lease held, pool.Acquire());
  auto second = pool.Acquire();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("pool_size"), std::string::npos);
}

// ---- retries and dead connections ----

TEST_F(PostgresStoreTest, DeadlockedTransactionIsRunAgain) {
  COHORT_ASSERT_OK_AND_ASSIGN(pg::PostgresOptions o, pg::ParsePostgresUrl(Url()));
  pg::Pool pool(o.conninfo, 2, std::chrono::milliseconds(1000));
  int attempts = 0;
  Result<int64_t> r =
      pg::RunTransaction(&pool, pg::TxnMode::kWrite, [&](Conn* c) -> Result<int64_t> {
        ++attempts;
        if (attempts == 1) {
          // A real error with the deadlock SQLSTATE, as the server reports one.
          COHORT_RETURN_IF_ERROR(c->ExecScript(
              "DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = '40P01'; END $$"));
        }
        COHORT_ASSIGN_OR_RETURN(PgResult res, c->ExecOnce("SELECT 42::int8"));
        return res.Int(0, 0);
      });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(attempts, 2);
}

TEST_F(PostgresStoreTest, OtherErrorsAreNotRetried) {
  COHORT_ASSERT_OK_AND_ASSIGN(pg::PostgresOptions o, pg::ParsePostgresUrl(Url()));
  pg::Pool pool(o.conninfo, 2, std::chrono::milliseconds(1000));
  int attempts = 0;
  Status s = pg::RunTransaction(&pool, pg::TxnMode::kWrite, [&](Conn* c) -> Status {
    ++attempts;
    return c->ExecScript("SELECT 1 / 0");
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);  // 22012 division_by_zero
  EXPECT_NE(s.message().find("22012"), std::string::npos);
  EXPECT_EQ(attempts, 1);
}

TEST_F(PostgresStoreTest, StatementsOfAFailedPipelinedTransactionAreRolledBack) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  COHORT_ASSERT_OK(raw->ExecScript("CREATE TABLE scratch (v bigint)"));
  COHORT_ASSERT_OK_AND_ASSIGN(pg::PostgresOptions o, pg::ParsePostgresUrl(Url()));
  pg::Pool pool(o.conninfo, 1, std::chrono::milliseconds(1000));
  // BEGIN travels with the first statement, COMMIT with the last: one round trip each.
  Status ok = pg::RunTransaction(&pool, pg::TxnMode::kWrite, [](Conn* c) -> Status {
    Params one;
    one.Add(int64_t{1});
    COHORT_RETURN_IF_ERROR(c->Exec("INSERT INTO scratch VALUES ($1)", one).status());
    Params two;
    two.Add(int64_t{2});
    COHORT_RETURN_IF_ERROR(c->ExecAndCommit("INSERT INTO scratch VALUES ($1)", two).status());
    EXPECT_FALSE(c->in_transaction());  // committed with the statement
    return Status::Ok();
  });
  COHORT_ASSERT_OK(ok);
  // A failing last statement: the COMMIT sent with it does not run, the first insert is undone.
  Status failed = pg::RunTransaction(&pool, pg::TxnMode::kWrite, [](Conn* c) -> Status {
    Params three;
    three.Add(int64_t{3});
    COHORT_RETURN_IF_ERROR(c->Exec("INSERT INTO scratch VALUES ($1)", three).status());
    Params zero;
    zero.Add(int64_t{0});
    return c->ExecAndCommit("INSERT INTO scratch VALUES (1 / $1)", zero).status();
  });
  EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM scratch"), 2);
  EXPECT_EQ(QueryInt("SELECT sum(v)::int8 FROM scratch"), 3);
  // The pooled connection came back clean and still works.
  Result<int64_t> after =
      pg::RunTransaction(&pool, pg::TxnMode::kRead, [](Conn* c) -> Result<int64_t> {
        COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec("SELECT count(*) FROM scratch"));
        return res.Int(0, 0);
      });
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(*after, 2);
}

TEST_F(PostgresStoreTest, ConnectionsKilledWhileIdleAreReplaced) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("pool_size=4"));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  ASSERT_TRUE(store->GetRun(Ref("run1")).ok());
  // A server restart or failover as the pool sees it: every backend of the store goes away.
  EXPECT_GE(QueryInt("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                     "datname = current_database() AND application_name = 'cohort'"),
            1);
  EXPECT_TRUE(store->GetRun(Ref("run1")).ok());  // a read
  IngestBatch b = OneRow(1, 1);
  EXPECT_TRUE(store->Ingest(Ref("run1"), "w", b, 1).ok());  // a write transaction
}

// ---- exactly once across servers ----

// Two store instances are two servers. Four threads (two per server) send the batches of one
// writer in shuffled orders, so that every batch arrives at both servers, often at the same
// moment: each must be stored exactly once and the writer's steps must stay dense.
TEST_F(PostgresStoreTest, TwoServersStoreEachBatchOfOneWriterExactlyOnce) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_a, Open("pool_size=4"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_b, Open("pool_size=4"));
  ASSERT_TRUE(server_a->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(server_b->JoinWriter(Ref("run1"), WriterJoin{.label = "rank_0"}).ok());
  constexpr int kBatches = 60, kRows = 50;
  auto batch = [](int seq) {
    IngestBatchBuilder bb(seq);
    for (int i = 0; i < kRows; ++i) {
      bb.AddHistoryRow(kAssignStep, seq * 1000 + i,
                       {{"loss", seq * 1000.0 + i}, {"acc", double(i)}});
    }
    bb.AddConsole(ConsoleLine{.time_ms = seq, .text = "batch " + std::to_string(seq)});
    IngestBatch b = bb.Finish();
    return b;
  };
  std::atomic<int> stored{0}, duplicates{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      PostgresStore* server = t % 2 == 0 ? server_a.get() : server_b.get();
      std::vector<int> order(kBatches);
      for (int i = 0; i < kBatches; ++i) order[i] = i + 1;
      std::shuffle(order.begin(), order.end(), std::mt19937(t));
      for (int seq : order) {
        auto r = server->Ingest(Ref("run1"), "rank_0", batch(seq), 1000 + seq);
        if (!r.ok()) {
          ++failures;
          ADD_FAILURE() << r.status().ToString();
        } else if (r->duplicate) {
          ++duplicates;
        } else {
          ++stored;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(stored.load(), kBatches);
  EXPECT_EQ(duplicates.load(), 3 * kBatches);

  for (PostgresStore* server : {server_a.get(), server_b.get()}) {
    COHORT_ASSERT_OK_AND_ASSIGN(
        auto hist, server->QueryHistory(HistoryQuery{.run = Ref("run1"), .keys = {"loss"}}));
    ASSERT_EQ(hist.size(), 1u);
    ASSERT_EQ(hist[0].points.size(), size_t(kBatches * kRows));
    std::multiset<double> values;
    for (size_t i = 0; i < hist[0].points.size(); ++i) {
      EXPECT_EQ(hist[0].points[i].step, int64_t(i));  // dense steps: no batch applied twice
      values.insert(hist[0].points[i].value);
    }
    for (int seq = 1; seq <= kBatches; ++seq) {
      for (int i = 0; i < kRows; ++i) EXPECT_EQ(values.count(seq * 1000.0 + i), 1u);
    }
    COHORT_ASSERT_OK_AND_ASSIGN(
        auto lines, server->QueryConsole(ConsoleQuery{.run = Ref("run1"), .limit = 10000}));
    EXPECT_EQ(lines.size(), size_t(kBatches));
    COHORT_ASSERT_OK_AND_ASSIGN(auto writers, server->ListWriters(Ref("run1")));
    ASSERT_EQ(writers.size(), 1u);
    EXPECT_EQ(writers[0].last_seq, kBatches);
    EXPECT_EQ(writers[0].next_step, kBatches * kRows);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM batches"), kBatches);
}

// A server that wrote a writer's last batch stores the next one in one round trip from what it
// remembers; when another server wrote in between, or the batch was stored before, that memory
// is stale and the batch takes the path that reads the rows: nothing is written twice or lost.
TEST_F(PostgresStoreTest, StaleIngestStateFromAnotherServerIsDetectedAndNotUsed) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_a, Open("pool_size=2"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_b, Open("pool_size=2"));
  ASSERT_TRUE(server_a->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(server_a->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  constexpr int kRows = 40;
  auto batch = [](int seq) {
    IngestBatchBuilder bb(seq);
    for (int i = 0; i < kRows; ++i) bb.AddHistoryRow(kAssignStep, seq, {{"loss", seq * 100.0 + i}});
    bb.AddConsole(ConsoleLine{.time_ms = seq, .text = "batch " + std::to_string(seq)});
    IngestBatch b = bb.Finish();
    return b;
  };
  auto ingest = [&](PostgresStore* server, int seq) {
    auto r = server->Ingest(Ref("run1"), "w", batch(seq), 1000 + seq);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : IngestResult{};
  };
  EXPECT_FALSE(ingest(server_a.get(), 1).duplicate);  // rows read: nothing remembered yet
  EXPECT_EQ(server_a->fast_ingests(), 0);
  EXPECT_EQ(ingest(server_a.get(), 2).next_step, 2 * kRows);
  EXPECT_EQ(server_a->fast_ingests(), 1);
  EXPECT_FALSE(ingest(server_b.get(), 3).duplicate);  // A's memory of the writer is now stale
  EXPECT_EQ(server_b->fast_ingests(), 0);
  IngestResult fourth = ingest(server_a.get(), 4);
  EXPECT_FALSE(fourth.duplicate);
  EXPECT_EQ(fourth.next_step, 4 * kRows);
  // Detected under the locks without an error: the batch was planned again from the rows read
  // there and stored on the second try.
  EXPECT_EQ(server_a->stale_ingests(), 1);
  EXPECT_EQ(server_a->fast_ingests(), 2);
  EXPECT_TRUE(ingest(server_a.get(), 4).duplicate);  // a retry is acknowledged, not stored
  EXPECT_TRUE(ingest(server_a.get(), 2).duplicate);
  EXPECT_EQ(server_a->fast_ingests(), 2);
  EXPECT_EQ(server_a->stale_ingests(), 1);
  EXPECT_FALSE(ingest(server_a.get(), 5).duplicate);
  EXPECT_EQ(server_a->fast_ingests(), 3);

  COHORT_ASSERT_OK_AND_ASSIGN(
      auto hist, server_b->QueryHistory(HistoryQuery{.run = Ref("run1"), .keys = {"loss"}}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), size_t(5 * kRows));
  for (size_t i = 0; i < hist[0].points.size(); ++i) {
    EXPECT_EQ(hist[0].points[i].step, int64_t(i));
    EXPECT_EQ(hist[0].points[i].value, double(i / kRows + 1) * 100.0 + double(i % kRows));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto lines, server_b->QueryConsole(ConsoleQuery{.run = Ref("run1"), .limit = 100}));
  ASSERT_EQ(lines.size(), 5u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].text, "batch " + std::to_string(i + 1));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, server_a->ListWriters(Ref("run1")));
  ASSERT_EQ(writers.size(), 1u);
  EXPECT_EQ(writers[0].last_seq, 5);
  EXPECT_EQ(writers[0].next_step, 5 * kRows);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM batches"), 5);
  EXPECT_EQ(QueryInt("SELECT sum(count)::int8 FROM series"), 5 * kRows);
}

// ingest_cache=off: every batch reads the writer's rows first; the data is the same.
TEST_F(PostgresStoreTest, IngestCacheOffStoresEveryBatchThroughTheReadingPath) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("pool_size=2&ingest_cache=off"));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  for (int seq = 1; seq <= 3; ++seq) {
    const IngestBatch b = OneRow(seq, seq);
    COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store->Ingest(Ref("run1"), "w", b, seq));
    EXPECT_EQ(r.next_step, seq);
  }
  EXPECT_EQ(store->fast_ingests(), 0);
  EXPECT_EQ(QueryInt("SELECT sum(count)::int8 FROM series"), 3);
}

// A deleted run's remembered writer is not written to: the batch fails as for an unknown run.
TEST_F(PostgresStoreTest, RememberedWriterOfADeletedRunIsNotWritten) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("pool_size=2"));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  IngestBatch b = OneRow(1, 1);
  ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b, 1).ok());
  COHORT_ASSERT_OK(store->DeleteRun(Ref("run1")));
  b.seq = 2;
  auto r = store->Ingest(Ref("run1"), "w", b, 2);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_EQ(store->fast_ingests(), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks"), 0);
}

TEST_F(PostgresStoreTest, TwoServersCreatingOneRunAtOnceMakeOneRun) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_a, Open());
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_b, Open());
  std::atomic<int> created{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      PostgresStore* server = t % 2 == 0 ? server_a.get() : server_b.get();
      RunUpsert u{.ref = Ref("shared"), .config_json = "{\"k" + std::to_string(t) + "\":1}"};
      auto r = server->UpsertRun(u);
      if (!r.ok()) {
        ++failures;
      } else if (r->second) {
        ++created;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(created.load(), 1);
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, server_a->GetRun(Ref("shared")));
  for (int t = 0; t < 6; ++t) {  // every server's config merge is kept
    EXPECT_NE(run.config_json.find("\"k" + std::to_string(t) + "\""), std::string::npos);
  }
}

TEST_F(PostgresStoreTest, ConsoleIdsFollowCommitOrderAcrossWriters) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_a, Open());
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_b, Open());
  ASSERT_TRUE(server_a->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(server_a->JoinWriter(Ref("run1"), WriterJoin{.label = "a"}).ok());
  ASSERT_TRUE(server_b->JoinWriter(Ref("run1"), WriterJoin{.label = "b"}).ok());
  // A reader tails the console while two writers on two servers append: following after_id it
  // must see every line exactly once.
  std::atomic<bool> done{false};
  std::vector<std::string> seen;
  std::thread reader([&] {
    int64_t after = 0;
    while (true) {
      const bool last_round = done.load();
      auto lines = server_a->QueryConsole(ConsoleQuery{.run = Ref("run1"), .after_id = after});
      if (!lines.ok()) break;
      for (const ConsoleLine& l : *lines) seen.push_back(l.label + l.text);
      if (!lines->empty()) after = lines->back().id;
      if (last_round && lines->empty()) break;
    }
  });
  std::vector<std::thread> writers;
  for (const char* label : {"a", "b"}) {
    writers.emplace_back([&, label] {
      PostgresStore* server = label[0] == 'a' ? server_a.get() : server_b.get();
      for (int seq = 1; seq <= 40; ++seq) {
        IngestBatch b{.seq = seq};
        for (int i = 0; i < 5; ++i) {
          b.console.push_back(ConsoleLine{.text = std::to_string(seq * 10 + i)});
        }
        EXPECT_TRUE(server->Ingest(Ref("run1"), label, b, seq).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 400u);
}

// ---- chunk layout: per-batch tail chunks, compacted into full chunks ----

TEST_F(PostgresStoreTest, SmallBatchesAreCompactedIntoFullChunksKeepingEveryPoint) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  // 700 batches of 13 rows: tails are compacted both for their chunk count (32 chunks of 13
  // points) and for reaching a full chunk (kMaxChunkPoints).
  constexpr int kBatches = 700, kRows = 13;
  for (int seq = 1; seq <= kBatches; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < kRows; ++i) {
      const double v = seq * 100 + i;
      b.AddHistoryRow(kAssignStep, seq * 100 + i, {{"m", v}});
    }
    ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b.Finish(), seq).ok()) << seq;
  }
  const int64_t total = kBatches * kRows;
  // Sealed chunks (before tail_idx) hold at least half a full chunk; the tail the rest, in at
  // most 32 chunks.
  auto q = [&](const std::string& what, const std::string& where) {
    return QueryInt("SELECT " + what + " FROM chunks c JOIN series s ON c.series_pk = s.pk WHERE " +
                    where);
  };
  const int64_t sealed_points = q("coalesce(sum(c.count), 0)::int8", "c.idx < s.tail_idx");
  EXPECT_GE(q("count(*)", "c.idx < s.tail_idx"), 2);
  EXPECT_EQ(q("count(*)",
              "c.idx < s.tail_idx AND c.count < " + std::to_string(series::kMaxChunkPoints / 2)),
            0);
  EXPECT_EQ(q("count(*)", "c.idx >= s.tail_idx"), QueryInt("SELECT tail_chunks FROM series"));
  EXPECT_LE(QueryInt("SELECT tail_chunks FROM series"), 32);
  EXPECT_EQ(QueryInt("SELECT tail_count FROM series"), total - sealed_points);
  EXPECT_EQ(QueryInt("SELECT sum(count)::int8 FROM chunks"), total);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store->QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);
  ASSERT_EQ(hist[0].points.size(), size_t(total));
  for (int64_t i = 0; i < total; ++i) {
    ASSERT_EQ(hist[0].points[i].step, i);
    ASSERT_EQ(hist[0].points[i].value, (i / kRows + 1) * 100 + i % kRows) << i;
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      hist, store->QueryHistory(HistoryQuery{.run = Ref("run1"), .series = {.buckets = 3}}));
  ASSERT_EQ(hist[0].buckets.size(), 3u);
  EXPECT_EQ(hist[0].buckets[0].count + hist[0].buckets[1].count + hist[0].buckets[2].count, total);
  EXPECT_EQ(hist[0].buckets[2].last, kBatches * 100 + kRows - 1);
  // The tail's chunks are in the partition chunks_tail, the sealed ones in chunks_sealed, which
  // compactions never delete from; the writer's end seals the tail: chunks_tail is left empty.
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks_tail c JOIN series s ON c.series_pk = s.pk "
                     "WHERE c.idx >= s.tail_idx"),
            QueryInt("SELECT tail_chunks FROM series"));
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks_tail"),
            QueryInt("SELECT tail_chunks FROM series"));
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks_sealed c JOIN series s ON c.series_pk = s.pk "
                     "WHERE c.idx >= s.tail_idx"),
            0);
  ASSERT_TRUE(store->FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 5).ok());
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks_tail"), 0);
  EXPECT_EQ(QueryInt("SELECT tail_chunks FROM series"), 0);
  EXPECT_EQ(QueryInt("SELECT sum(count)::int8 FROM chunks_sealed"), total);
}

// One-row batches of 20 keys: every compaction deletes its series' tail rows, and so does the
// writer's end; past sql::kTailVacuumRows of them the store VACUUMs chunks_tail itself (autovacuum
// may not come round for a minute), and the points are all there.
TEST_F(PostgresStoreTest, StoreVacuumsChunksTailAfterEnoughDeletedTailRows) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  constexpr int kKeys = 20, kBatches = 100;
  for (int seq = 1; seq <= kBatches; ++seq) {
    IngestBatchBuilder b(seq);
    std::vector<std::string> keys;
    for (int k = 0; k < kKeys; ++k) keys.push_back("k" + std::to_string(k));
    std::vector<IngestBatchBuilder::Cell> cells;
    for (const std::string& k : keys) cells.emplace_back(k, double(seq));
    b.AddHistoryRow(kAssignStep, seq, std::span<const IngestBatchBuilder::Cell>(cells));
    ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b.Finish(), seq).ok()) << seq;
  }
  // The seal deletes the rest: more than kKeys * kBatches tail rows in all.
  ASSERT_TRUE(store->FinishWriter(Ref("run1"), "w", RunState::kFinished, 0, 5).ok());
  for (int i = 0; i < 100 && store->tail_vacuums() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(store->tail_vacuums(), 1);
  EXPECT_LE(store->tail_vacuums(), 2);  // one per sql::kTailVacuumRows rows at most
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks_tail"), 0);
  EXPECT_EQ(QueryInt("SELECT sum(count)::int8 FROM chunks_sealed"), kKeys * kBatches);
  // Autovacuum's threshold for the table is the same constant as the store's.
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pg_class WHERE relname = 'chunks_tail' AND "
                     "'autovacuum_vacuum_threshold=" +
                     std::to_string(sql::kTailVacuumRows) + "' = ANY (reloptions)"),
            1);
}

TEST_F(PostgresStoreTest, OneLargeBatchIsSealedWholeAsAlignedChunks) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  const int n = 2 * series::kMaxChunkPoints + series::kMaxChunkPoints / 4;
  IngestBatchBuilder b(1);
  for (int i = 0; i < n; ++i) b.AddHistoryRow(kAssignStep, 0, {{"m", double(i)}});
  ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b.Finish(), 1).ok());
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks"), 3);
  EXPECT_EQ(QueryInt("SELECT tail_count FROM series"), 0);  // a large batch is sealed whole
  IngestBatchBuilder more_rows(2);
  more_rows.AddHistoryRow(kAssignStep, 0, {{"m", double(n)}});
  const IngestBatch more = more_rows.Finish();
  ASSERT_TRUE(store->Ingest(Ref("run1"), "w", more, 2).ok());
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks"), 4);  // appended, nothing rewritten
  EXPECT_EQ(QueryInt("SELECT max(idx) FROM chunks"), 3);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store->ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].count, n + 1);
  EXPECT_EQ(series[0].max_step, n);
}

TEST_F(PostgresStoreTest, LargeBatchesAreWrittenOnceAsSealedChunks) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  const int rows = series::kMaxChunkPoints * 3 / 4;
  for (int seq = 1; seq <= 5; ++seq) {
    IngestBatchBuilder b(seq);
    for (int i = 0; i < rows; ++i) b.AddHistoryRow(kAssignStep, 0, {{"m", double(i)}});
    ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b.Finish(), seq).ok());
  }
  // Each batch sealed at once, cut at multiples of 1,024 steps (series/tail.h): batches 2 and 3
  // cross an edge and make two chunks each; none in the tail, none rewritten (no index gaps).
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks"), 7);
  EXPECT_EQ(QueryInt("SELECT max(idx) FROM chunks"), 6);
  EXPECT_EQ(QueryInt("SELECT tail_count FROM series"), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM chunks WHERE min_step / 1024 <> max_step / 1024"), 0);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store->ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].count, 5 * rows);
}

// ---- text PostgreSQL cannot hold ----

TEST_F(PostgresStoreTest, NulCharactersAreStoredAsReplacementCharacters) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  RunUpsert u{.ref = Ref("run1"), .config_json = R"({"note":"a\u0000b"})"};
  u.name = std::string("x\0y", 3);
  ASSERT_TRUE(store->UpsertRun(u).ok());
  ASSERT_TRUE(store->JoinWriter(Ref("run1"), WriterJoin{.label = "w"}).ok());
  IngestBatch b{.seq = 1};
  b.console.push_back(ConsoleLine{.text = std::string("bell\0end", 8)});
  ASSERT_TRUE(store->Ingest(Ref("run1"), "w", b, 1).ok());
  COHORT_ASSERT_OK_AND_ASSIGN(RunRecord run, store->GetRun(Ref("run1")));
  EXPECT_EQ(run.name, "x\xEF\xBF\xBDy");
  EXPECT_NE(run.config_json.find("a\\u0000b"), std::string::npos);  // config text kept as is
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store->QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text,
            "bell\xEF\xBF\xBD"
            "end");
  RunQuery q{.entity = "acme", .project = "vision", .filters = {{"config.note", "~", {"a"}}}};
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store->ListRuns(q));
  EXPECT_EQ(page.runs.size(), 1u);
  // The jsonb copy rewrites only the escape \u0000, not an escaped backslash before "u0000".
  ASSERT_TRUE(store->PatchRun(Ref("run1"), RunPatch{.summary_json = R"({"s":"x\\u0000"})"}).ok());
  q.filters = {{"summary.s", "==", {"x\\u0000"}}};
  COHORT_ASSERT_OK_AND_ASSIGN(page, store->ListRuns(q));
  EXPECT_EQ(page.runs.size(), 1u);
  q.filters = {{"config.note", "==", {"a\xEF\xBF\xBD" "b"}}};
  COHORT_ASSERT_OK_AND_ASSIGN(page, store->ListRuns(q));
  EXPECT_EQ(page.runs.size(), 1u);
}

// Deleting a run deletes everything under it through the foreign keys (ON DELETE CASCADE), and
// nothing of another run.
TEST_F(PostgresStoreTest, DeleteRunTakesEverythingUnderTheRunWithIt) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open());
  for (const char* id : {"gone", "kept"}) {
    ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref(id)}).ok());
    ASSERT_TRUE(store->JoinWriter(Ref(id), WriterJoin{.label = "w"}).ok());
    IngestBatch b = OneRow(1, 1);
    b.console.push_back(ConsoleLine{.time_ms = 1, .text = "line"});
    ASSERT_TRUE(store->Ingest(Ref(id), "w", b, 1).ok());
    IngestBatch positioned;
    positioned.positions.push_back(StreamPosition{"history", 0, 1});
    ASSERT_TRUE(store->Ingest(Ref(id), "w", positioned, 2).ok());
    ASSERT_TRUE(store->PutRunFile(Ref(id), RunFile{.name = "f.txt", .data = "x"}).ok());
  }
  const char* kTables[] = {"writers", "batches", "stream_positions", "series", "chunks",
                           "console", "run_files"};
  for (const char* t : kTables) {
    EXPECT_EQ(QueryInt(std::string("SELECT count(*) FROM ") + t), 2) << t;
  }
  COHORT_ASSERT_OK(store->DeleteRun(Ref("gone")));
  for (const char* t : kTables) {
    EXPECT_EQ(QueryInt(std::string("SELECT count(*) FROM ") + t), 1) << t;
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM runs"), 1);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines, store->QueryConsole(ConsoleQuery{.run = Ref("kept")}));
  EXPECT_EQ(lines.size(), 1u);
}

// ---- read replicas ----

TEST_F(PostgresStoreTest, ReadHostsServeQueriesFromTheirOwnPool) {
  // The cluster itself stands in for a replica.
  const std::string replica =
      pg::TestCluster()->dir() + ":" + std::to_string(pg::TestCluster()->port());
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("read_hosts=" + replica + "&read_pool_size=1"));
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref("run1")}).ok());
  EXPECT_EQ(store->read_pool()->open(), 0);
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page,
                              store->ListRuns(RunQuery{.entity = "acme", .project = "vision"}));
  EXPECT_EQ(page.runs.size(), 1u);
  EXPECT_EQ(store->read_pool()->open(), 1);
  EXPECT_NE(store->read_pool(), store->primary_pool());
}

}  // namespace
}  // namespace cohort::store
