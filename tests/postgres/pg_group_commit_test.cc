// Group commit on PostgreSQL (src/store/postgres/pg_group_commit.h): members that arrive while a
// group transaction is in flight share the next one; a member whose statement fails is refused
// alone; a failed COMMIT fails every member; members of one key never share a transaction; and,
// through PostgresStore::Ingest, concurrent batches of several writers are committed together
// and stored exactly once, also when one of them is stale or a duplicate.
//
// A group is held in flight deterministically by a lock the test holds (an advisory lock, or a
// writer row locked FOR UPDATE from another connection), never by timing.
#include "store/postgres/pg_group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "pg_environment.h"
#include "store/postgres/pg_options.h"
#include "store/postgres/pg_pool.h"
#include "store/postgres/pg_store.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

using pg::Conn;
using pg::GroupCommit;
using pg::Params;

class PgGroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = pg::FreshDatabase();
    ASSERT_FALSE(db_.empty());
    raw_ = Raw();
    ASSERT_NE(raw_, nullptr);
    auto options = pg::ParsePostgresUrl(pg::TestCluster()->Url(db_));
    ASSERT_TRUE(options.ok()) << options.status().ToString();
    pool_ = std::make_unique<pg::Pool>(options->conninfo, 4, std::chrono::milliseconds(10000));
  }
  void TearDown() override {
    pool_.reset();
    raw_.reset();
    if (!db_.empty() && pg::TestCluster() != nullptr) (void)pg::TestCluster()->DropDatabase(db_);
  }

  std::unique_ptr<Conn> Raw() const {
    auto options = pg::ParsePostgresUrl(pg::TestCluster()->Url(db_));
    EXPECT_TRUE(options.ok()) << options.status().ToString();
    options->conninfo.emplace_back("application_name", "cohort-test");
    auto conn = Conn::Connect(options->conninfo);
    EXPECT_TRUE(conn.ok()) << conn.status().ToString();
    return conn.ok() ? std::move(conn).value() : nullptr;
  }
  int64_t QueryInt(const std::string& sql) const {
    auto res = raw_->ExecOnce(sql);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? res->Int(0, 0) : -1;
  }
  // Waits (bounded) until `done` holds; false when it never did.
  static bool WaitFor(const std::function<bool()>& done) {
    for (int i = 0; i < 3000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  // Sessions of this database waiting for a lock.
  int64_t LockWaiters() const {
    return QueryInt(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
        "wait_event_type = 'Lock'");
  }

  std::string db_;
  std::unique_ptr<Conn> raw_;
  std::unique_ptr<pg::Pool> pool_;
};

// A member inserting k into `table`, with its own Params.
struct InsertMember {
  Params lock_params, write_params;
  GroupCommit::Member member;
  GroupCommit::Answer answer;

  InsertMember(const char* table_sql, int64_t k, std::string key) {
    write_params.Add(k);
    member.write.push_back({table_sql, &write_params});
    member.lock_order = k;
    member.key = std::move(key);
  }
};

constexpr const char* kInsertGc = "INSERT INTO gc (k) VALUES ($1)";
constexpr const char* kBlock = "SELECT pg_advisory_xact_lock(7)";

class Blocker {
 public:
  // Holds advisory lock 7 on `conn` and puts a group in flight that waits for it (member k = 0).
  Blocker(PgGroupCommitTest* t, Conn* conn, GroupCommit* gc, const char* table_sql)
      : conn_(conn), first_(table_sql, 0, "first") {
    EXPECT_TRUE(conn_->ExecScript("SELECT pg_advisory_lock(7)").ok());
    first_.member.lock.push_back({kBlock, &no_params_});
    thread_ = std::thread([this, gc] { first_.answer = gc->Run(first_.member); });
    (void)t;
  }
  void Release() {
    EXPECT_TRUE(conn_->ExecScript("SELECT pg_advisory_unlock(7)").ok());
    thread_.join();
  }
  const GroupCommit::Answer& answer() const { return first_.answer; }

 private:
  Conn* conn_;
  Params no_params_;
  InsertMember first_;
  std::thread thread_;
};

TEST_F(PgGroupCommitTest, MembersArrivingDuringACommitShareTheNextTransaction) {
  ASSERT_TRUE(raw_->ExecScript("CREATE TABLE gc (k int8 PRIMARY KEY, tx int8 NOT NULL DEFAULT "
                               "txid_current())")
                  .ok());
  GroupCommit gc(pool_.get(), /*max_in_flight=*/1);
  auto holder = Raw();
  Blocker blocker(this, holder.get(), &gc, kInsertGc);
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  constexpr int kMembers = 8;
  std::vector<std::unique_ptr<InsertMember>> members;
  std::vector<std::thread> threads;
  for (int k = 1; k <= kMembers; ++k) {
    members.push_back(std::make_unique<InsertMember>(kInsertGc, k, "w" + std::to_string(k)));
  }
  for (auto& m : members)
    threads.emplace_back([&gc, m = m.get()] { m->answer = gc.Run(m->member); });
  ASSERT_TRUE(WaitFor([&] { return gc.queued() == kMembers; }));
  EXPECT_EQ(QueryInt("SELECT count(*) FROM gc"), 0);  // nothing committed while in flight
  blocker.Release();
  for (auto& t : threads) t.join();

  EXPECT_EQ(blocker.answer().outcome, GroupCommit::Outcome::kCommitted)
      << blocker.answer().status.ToString();
  for (auto& m : members) {
    EXPECT_EQ(m->answer.outcome, GroupCommit::Outcome::kCommitted) << m->answer.status.ToString();
  }
  GroupCommit::Counters c = gc.counters();
  EXPECT_EQ(c.transactions, 2);
  EXPECT_EQ(c.committed, kMembers + 1);
  EXPECT_EQ(c.largest_group, size_t(kMembers));
  EXPECT_EQ(QueryInt("SELECT count(*) FROM gc"), kMembers + 1);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT tx) FROM gc WHERE k > 0"), 1);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT tx) FROM gc"), 2);
}

TEST_F(PgGroupCommitTest, MemberWhoseStatementFailsIsRefusedAndTheOthersCommit) {
  ASSERT_TRUE(raw_->ExecScript("CREATE TABLE gc (k int8 PRIMARY KEY, tx int8 NOT NULL DEFAULT "
                               "txid_current()); INSERT INTO gc (k) VALUES (100)")
                  .ok());
  GroupCommit gc(pool_.get(), 1);
  auto holder = Raw();
  Blocker blocker(this, holder.get(), &gc, kInsertGc);
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  std::vector<std::unique_ptr<InsertMember>> members;
  for (int64_t k : {1, 2, 100, 3}) {  // 100 exists: a unique violation
    members.push_back(std::make_unique<InsertMember>(kInsertGc, k, "w" + std::to_string(k)));
  }
  std::vector<std::thread> threads;
  for (auto& m : members)
    threads.emplace_back([&gc, m = m.get()] { m->answer = gc.Run(m->member); });
  ASSERT_TRUE(WaitFor([&] { return gc.queued() == members.size(); }));
  blocker.Release();
  for (auto& t : threads) t.join();

  for (auto& m : members) {
    if (m->member.key == "w100") {
      EXPECT_EQ(m->answer.outcome, GroupCommit::Outcome::kRefused);
      EXPECT_NE(m->answer.status.message().find("23505"), std::string::npos)
          << m->answer.status.ToString();
    } else {
      EXPECT_EQ(m->answer.outcome, GroupCommit::Outcome::kCommitted) << m->answer.status.ToString();
    }
  }
  GroupCommit::Counters c = gc.counters();
  EXPECT_EQ(c.refused, 1);
  EXPECT_EQ(c.committed, 4);
  EXPECT_EQ(c.largest_group, 3u);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM gc WHERE k IN (1, 2, 3)"), 3);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT tx) FROM gc WHERE k IN (1, 2, 3)"), 1);
}

TEST_F(PgGroupCommitTest, FailedCommitFailsEveryMemberAndStoresNone) {
  // A deferred unique constraint is checked at COMMIT: two members inserting the same k pass
  // their statements and make the group's COMMIT fail.
  ASSERT_TRUE(raw_->ExecScript("CREATE TABLE gd (k int8, CONSTRAINT gd_k UNIQUE (k) DEFERRABLE "
                               "INITIALLY DEFERRED); CREATE TABLE gc (k int8)")
                  .ok());
  constexpr const char* kInsertGd = "INSERT INTO gd (k) VALUES ($1)";
  GroupCommit gc(pool_.get(), 1);
  auto holder = Raw();
  Blocker blocker(this, holder.get(), &gc, kInsertGc);
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  std::vector<std::unique_ptr<InsertMember>> members;
  members.push_back(std::make_unique<InsertMember>(kInsertGd, 1, "a"));
  members.push_back(std::make_unique<InsertMember>(kInsertGd, 2, "b"));
  members.push_back(std::make_unique<InsertMember>(kInsertGd, 1, "c"));
  std::vector<std::thread> threads;
  for (auto& m : members)
    threads.emplace_back([&gc, m = m.get()] { m->answer = gc.Run(m->member); });
  ASSERT_TRUE(WaitFor([&] { return gc.queued() == members.size(); }));
  blocker.Release();
  for (auto& t : threads) t.join();

  EXPECT_EQ(blocker.answer().outcome, GroupCommit::Outcome::kCommitted)
      << blocker.answer().status.ToString();
  for (auto& m : members) {
    EXPECT_EQ(m->answer.outcome, GroupCommit::Outcome::kFailed);
    EXPECT_NE(m->answer.status.message().find("23505"), std::string::npos)
        << m->answer.status.ToString();
  }
  GroupCommit::Counters c = gc.counters();
  EXPECT_EQ(c.failed, 3);
  EXPECT_EQ(c.committed, 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM gd"), 0);
}

TEST_F(PgGroupCommitTest, MembersOfOneKeyNeverShareATransaction) {
  ASSERT_TRUE(raw_->ExecScript("CREATE TABLE gc (k int8 PRIMARY KEY, tx int8 NOT NULL DEFAULT "
                               "txid_current())")
                  .ok());
  GroupCommit gc(pool_.get(), 1);
  auto holder = Raw();
  Blocker blocker(this, holder.get(), &gc, kInsertGc);
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  std::vector<std::unique_ptr<InsertMember>> members;
  members.push_back(std::make_unique<InsertMember>(kInsertGc, 1, "w"));
  members.push_back(std::make_unique<InsertMember>(kInsertGc, 2, "w"));
  members.push_back(std::make_unique<InsertMember>(kInsertGc, 3, "x"));
  std::vector<std::thread> threads;
  for (auto& m : members) {  // queued in this order
    const size_t before = gc.queued();
    threads.emplace_back([&gc, m = m.get()] { m->answer = gc.Run(m->member); });
    ASSERT_TRUE(WaitFor([&] { return gc.queued() == before + 1; }));
  }
  blocker.Release();
  for (auto& t : threads) t.join();
  for (auto& m : members) EXPECT_EQ(m->answer.outcome, GroupCommit::Outcome::kCommitted);
  EXPECT_EQ(gc.counters().transactions, 3);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT tx) FROM gc WHERE k IN (1, 3)"), 1);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT tx) FROM gc WHERE k IN (1, 2)"), 2);
}

TEST(PgGroupCommitOptionTest, GroupCommitOptionIsParsedAndBadValuesAreRefused) {
  auto off = pg::ParsePostgresUrl("postgresql://h/db");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->group_commit, 0);  // off by default
  auto two = pg::ParsePostgresUrl("postgresql://h/db?group_commit=2");
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->group_commit, 2);
  auto named_off = pg::ParsePostgresUrl("postgresql://h/db?group_commit=off");
  ASSERT_TRUE(named_off.ok()) << named_off.status().ToString();
  EXPECT_EQ(named_off->group_commit, 0);
  for (const char* bad : {"group_commit=-1", "group_commit=many", "group_commit=1001"}) {
    auto r = pg::ParsePostgresUrl(std::string("postgresql://h/db?") + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("group_commit"), std::string::npos) << bad;
  }
}

// ---- through PostgresStore::Ingest ----

RunRef Ref() { return RunRef{"acme", "vision", "run1"}; }

constexpr int kRows = 20;
IngestBatch Batch(int seq, int writer) {
  IngestBatch b{.seq = seq};
  for (int i = 0; i < kRows; ++i) {
    b.rows.push_back(HistoryRow{.time_ms = seq * 100 + i,
                                .values = {{"loss", writer * 1e6 + seq * 1000.0 + i}}});
  }
  return b;
}

class PgGroupIngestTest : public PgGroupCommitTest {
 protected:
  Result<std::unique_ptr<PostgresStore>> Open(const std::string& extra) const {
    return PostgresStore::OpenUrl(pg::TestCluster()->Url(db_, extra));
  }
  // Locks writer `label`'s row from raw_ (in a transaction) until Unlock().
  void LockWriter(const std::string& label) {
    ASSERT_TRUE(
        raw_->ExecScript("BEGIN; SELECT 1 FROM writers WHERE label = '" + label + "' FOR UPDATE")
            .ok());
  }
  void Unlock() { ASSERT_TRUE(raw_->ExecScript("ROLLBACK").ok()); }
  int64_t PointsOf(const std::string& label) const {
    return QueryInt(
        "SELECT coalesce(sum(s.count), 0)::int8 FROM series s JOIN writers w ON "
        "w.pk = s.writer_pk WHERE w.label = '" +
        label + "'");
  }
  // Each of writer `label`'s stored values in step order, checked against Batch(seq, writer)
  // for seq 1..batches: every point once, in order.
  void ExpectStored(PostgresStore* store, const std::string& label, int writer, int batches) {
    EXPECT_EQ(PointsOf(label), int64_t(batches) * kRows) << label;
    auto hist = store->QueryHistory(HistoryQuery{.run = Ref(), .keys = {"loss"}});
    ASSERT_TRUE(hist.ok()) << hist.status().ToString();
    int64_t matched = 0;
    for (const auto& s : *hist) {
      if (s.writer != label) continue;
      ASSERT_EQ(s.points.size(), size_t(batches) * kRows) << label;
      for (size_t i = 0; i < s.points.size(); ++i) {
        EXPECT_EQ(s.points[i].step, int64_t(i));
        EXPECT_EQ(s.points[i].value, writer * 1e6 + double(i / kRows + 1) * 1000.0 + i % kRows);
      }
      ++matched;
    }
    EXPECT_EQ(matched, 1) << label;
  }
};

TEST_F(PgGroupIngestTest, ConcurrentBatchesOfWritersCommitTogetherAndDuplicatesAreStoredOnce) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto store, Open("pool_size=4&group_commit=1"));
  ASSERT_NE(store->group_commit(), nullptr);
  ASSERT_TRUE(store->UpsertRun(RunUpsert{.ref = Ref()}).ok());
  constexpr int kWriters = 5;
  for (int w = 0; w < kWriters; ++w) {
    const std::string label = "w" + std::to_string(w);
    ASSERT_TRUE(store->JoinWriter(Ref(), WriterJoin{.label = label}).ok());
    for (int seq = 1; seq <= 2; ++seq) {  // the second is planned from the remembered state
      auto r = store->Ingest(Ref(), label, Batch(seq, w), 1000);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  const int64_t fast_before = store->fast_ingests();
  EXPECT_EQ(fast_before, kWriters);

  LockWriter("w0");  // w0's batch 3 leads a group that waits for this lock
  std::vector<std::thread> threads;
  std::vector<Result<IngestResult>> results(kWriters + 1, Status::Internal("not run"));
  threads.emplace_back([&] { results[0] = store->Ingest(Ref(), "w0", Batch(3, 0), 2000); });
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  for (int w = 1; w < kWriters; ++w) {
    threads.emplace_back(
        [&, w] { results[w] = store->Ingest(Ref(), "w" + std::to_string(w), Batch(3, w), 2000); });
  }
  // w1's batch 3 once more (a retry racing the original): never in the same transaction.
  threads.emplace_back([&] { results[kWriters] = store->Ingest(Ref(), "w1", Batch(3, 1), 2000); });
  ASSERT_TRUE(WaitFor([&] { return store->group_commit()->queued() == kWriters; }));
  Unlock();
  for (auto& t : threads) t.join();

  int duplicates = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    duplicates += r->duplicate ? 1 : 0;
  }
  EXPECT_EQ(duplicates, 1);
  EXPECT_TRUE(results[1]->duplicate || results[kWriters]->duplicate);
  GroupCommit::Counters c = store->group_commit()->counters();
  EXPECT_GE(c.largest_group, size_t(kWriters - 1));  // w1..w4 in one transaction
  EXPECT_EQ(store->fast_ingests(), fast_before + kWriters);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM batches"), kWriters * 3);
  for (int w = 0; w < kWriters; ++w) ExpectStored(store.get(), "w" + std::to_string(w), w, 3);
}

TEST_F(PgGroupIngestTest, StaleBatchInAGroupWritesNothingAndIsStoredWhenPlannedAgain) {
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_a, Open("pool_size=4&group_commit=1"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto server_b, Open("pool_size=2"));
  ASSERT_TRUE(server_a->UpsertRun(RunUpsert{.ref = Ref()}).ok());
  constexpr int kWriters = 4;
  for (int w = 0; w < kWriters; ++w) {
    const std::string label = "w" + std::to_string(w);
    ASSERT_TRUE(server_a->JoinWriter(Ref(), WriterJoin{.label = label}).ok());
    for (int seq = 1; seq <= 2; ++seq) {
      ASSERT_TRUE(server_a->Ingest(Ref(), label, Batch(seq, w), 1000).ok());
    }
  }
  // Server B writes w2's batch 3: what server A remembers of w2 is now stale.
  ASSERT_TRUE(server_b->Ingest(Ref(), "w2", Batch(3, 2), 1500).ok());

  LockWriter("w0");
  std::vector<std::thread> threads;
  std::vector<Result<IngestResult>> results(kWriters, Status::Internal("not run"));
  threads.emplace_back([&] { results[0] = server_a->Ingest(Ref(), "w0", Batch(3, 0), 2000); });
  ASSERT_TRUE(WaitFor([&] { return LockWaiters() == 1; }));
  const std::vector<std::pair<int, int>> next = {{1, 3}, {2, 4}, {3, 3}};  // (writer, seq)
  for (size_t i = 0; i < next.size(); ++i) {
    threads.emplace_back([&, i] {
      auto [w, seq] = next[i];
      results[i + 1] = server_a->Ingest(Ref(), "w" + std::to_string(w), Batch(seq, w), 2000);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return server_a->group_commit()->queued() == next.size(); }));
  Unlock();
  for (auto& t : threads) t.join();

  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->duplicate);
  }
  EXPECT_EQ(results[2]->next_step, 4 * kRows);
  GroupCommit::Counters c = server_a->group_commit()->counters();
  // No statement failed: w2's batch 4, planned from a stale state, wrote nothing in the group
  // it shared with w1 and w3 (which committed) and was stored when planned again.
  EXPECT_EQ(c.refused, 0);
  EXPECT_EQ(server_a->stale_ingests(), 1);
  EXPECT_EQ(c.largest_group, 3u);
  ExpectStored(server_a.get(), "w0", 0, 3);
  ExpectStored(server_a.get(), "w1", 1, 3);
  ExpectStored(server_a.get(), "w2", 2, 4);
  ExpectStored(server_a.get(), "w3", 3, 3);
}

}  // namespace
}  // namespace cohort::store
