#include "store/sqlite/sqlite_group_commit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace cohort::store::sqlite {
namespace {

namespace fs = std::filesystem;

// A database file in a fresh temporary directory with table t(x) and a deferred foreign key
// (a row of t with x < 0 must have a parent, checked at COMMIT); a GroupCommit over its write
// connection, and a second connection that reads what was committed. Single-threaded set-up.
class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "cohort-group-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto db = Db::Open((dir_ / "g.db").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 5000);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    writer_ = std::move(db).value();
    ASSERT_TRUE(writer_
                    ->Exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; "
                           "CREATE TABLE parent (id INTEGER PRIMARY KEY); "
                           "CREATE TABLE t (x INTEGER, p INTEGER REFERENCES parent (id) "
                           "DEFERRABLE INITIALLY DEFERRED)")
                    .ok());
    auto r = Db::Open((dir_ / "g.db").string(), SQLITE_OPEN_READONLY, 5000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reader_ = std::move(r).value();
    group_ = std::make_unique<GroupCommit>(&write_mu_, &writer_);
  }
  void TearDown() override {
    group_.reset();
    reader_.reset();
    writer_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Work that inserts x (with a parent that does not exist when x < 0).
  static GroupCommit::Work Insert(int64_t x) {
    return [x](Db* db) -> Result<bool> {
      COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare("INSERT INTO t (x, p) VALUES (?, ?)"));
      st.Bind(x);
      if (x < 0) {
        st.Bind(int64_t{999});
      } else {
        st.BindNull();
      }
      COHORT_RETURN_IF_ERROR(st.Run());
      return true;
    };
  }

  // Committed rows of t, as another connection sees them.
  int64_t Committed(int64_t x) {
    auto n = reader_->QueryInt("SELECT count(*) FROM t WHERE x = " + std::to_string(x));
    return n.ok() ? *n : -1;
  }
  int64_t CommittedRows() {
    auto n = reader_->QueryInt("SELECT count(*) FROM t");
    return n.ok() ? *n : -1;
  }

  // Runs `works` each on its own thread while a first call holds the transaction open, so that
  // all of them wait and are committed together in the next group. Returns their statuses.
  std::vector<Status> RunAsOneGroup(const std::vector<GroupCommit::Work>& works) {
    std::atomic<bool> release{false}, inside{false};
    std::thread first([&] {
      Status s = group_->Run([&](Db* db) -> Result<bool> {
        inside = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return Insert(1000)(db);
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    while (!inside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<Status> statuses(works.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < works.size(); ++i) {
      threads.emplace_back([&, i] { statuses[i] = group_->Run(works[i]); });
    }
    // Every call is queued behind the open transaction before it is let go.
    while (group_->queued() < works.size()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    release = true;
    first.join();
    for (auto& t : threads) t.join();
    return statuses;
  }

  fs::path dir_;
  Mutex write_mu_;
  std::unique_ptr<Db> writer_;
  std::unique_ptr<Db> reader_;
  std::unique_ptr<GroupCommit> group_;
};

TEST_F(GroupCommitTest, LoneCallCommitsInItsOwnTransaction) {
  ASSERT_TRUE(group_->Run(Insert(7)).ok());
  EXPECT_EQ(Committed(7), 1);
  GroupCommit::Counters c = group_->counters();
  EXPECT_EQ(c.transactions, 1);
  EXPECT_EQ(c.calls, 1);
}

TEST_F(GroupCommitTest, CallsArrivingDuringACommitShareTheNextTransaction) {
  std::vector<GroupCommit::Work> works;
  for (int i = 0; i < 20; ++i) works.push_back(Insert(i));
  std::vector<Status> statuses = RunAsOneGroup(works);
  for (const Status& s : statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Committed(i), 1) << i;
  GroupCommit::Counters c = group_->counters();
  EXPECT_EQ(c.calls, 21);
  EXPECT_EQ(c.transactions, 2);  // the first call's, then all 20 together
  EXPECT_EQ(c.largest_group, 20u);
}

TEST_F(GroupCommitTest, FailingCallRollsBackOnlyItsOwnChanges) {
  std::vector<GroupCommit::Work> works = {
      Insert(1),
      [](Db* db) -> Result<bool> {  // writes, then fails
        COHORT_RETURN_IF_ERROR(db->Exec("INSERT INTO t (x) VALUES (2)"));
        return Status::NotFound("writer 'ghost' not found");
      },
      Insert(3),
  };
  std::vector<Status> statuses = RunAsOneGroup(works);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].ToString();
  EXPECT_EQ(statuses[1].code(), StatusCode::kNotFound);
  EXPECT_TRUE(statuses[2].ok()) << statuses[2].ToString();
  EXPECT_EQ(Committed(1), 1);
  EXPECT_EQ(Committed(2), 0);
  EXPECT_EQ(Committed(3), 1);
  EXPECT_EQ(group_->counters().largest_group, 3u);
}

TEST_F(GroupCommitTest, DiscardedCallSucceedsAndLeavesNothing) {
  std::vector<GroupCommit::Work> works = {
      Insert(1),
      [](Db* db) -> Result<bool> {  // a duplicate: its changes are undone, the call succeeds
        COHORT_RETURN_IF_ERROR(db->Exec("INSERT INTO t (x) VALUES (2)"));
        return false;
      },
  };
  std::vector<Status> statuses = RunAsOneGroup(works);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_TRUE(statuses[1].ok());
  EXPECT_EQ(Committed(1), 1);
  EXPECT_EQ(Committed(2), 0);
  // Alone, too.
  ASSERT_TRUE(group_
                  ->Run([](Db* db) -> Result<bool> {
                    COHORT_RETURN_IF_ERROR(db->Exec("INSERT INTO t (x) VALUES (5)"));
                    return false;
                  })
                  .ok());
  EXPECT_EQ(Committed(5), 0);
}

TEST_F(GroupCommitTest, FailedCommitFailsEveryCallOfTheGroupAndStoresNothing) {
  // x = -1 breaks the deferred foreign key: the COMMIT of its group fails.
  std::vector<GroupCommit::Work> works = {Insert(1), Insert(-1), Insert(3)};
  std::vector<Status> statuses = RunAsOneGroup(works);
  for (const Status& s : statuses) {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("COMMIT"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(CommittedRows(), 1);  // only the first group's row (x = 1000)
  EXPECT_EQ(Committed(1000), 1);
  // The connection is usable afterwards.
  ASSERT_TRUE(group_->Run(Insert(4)).ok());
  EXPECT_EQ(Committed(4), 1);
}

TEST_F(GroupCommitTest, EveryCallReturnsOnlyAfterItsRowIsCommitted) {
  constexpr int kThreads = 8, kCalls = 50;
  std::atomic<int> unseen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto r = Db::Open((dir_ / "g.db").string(), SQLITE_OPEN_READONLY, 5000);
      ASSERT_TRUE(r.ok());
      for (int i = 0; i < kCalls; ++i) {
        const int64_t x = t * 1000 + i;
        ASSERT_TRUE(group_->Run(Insert(x)).ok());
        auto n = (*r)->QueryInt("SELECT count(*) FROM t WHERE x = " + std::to_string(x));
        if (!n.ok() || *n != 1) ++unseen;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(unseen.load(), 0);
  EXPECT_EQ(CommittedRows(), kThreads * kCalls);
  GroupCommit::Counters c = group_->counters();
  EXPECT_EQ(c.calls, kThreads * kCalls);
  EXPECT_LE(c.transactions, c.calls);
}

// Records what GroupCommit tells its observer, as one string: "B" began, "k"/"r" a call kept or
// rolled back, "C"/"L" the group committed or lost. Called by one leader at a time.
struct RecordingObserver : GroupCommit::Observer {
  void GroupBegan(Db*) override { log += "B"; }
  void CallEnded(bool kept) override { log += kept ? "k" : "r"; }
  void GroupEnded(bool committed) override { log += committed ? "C " : "L "; }
  std::string log;
};

TEST_F(GroupCommitTest, ObserverHearsEachCallAndHowTheGroupEnded) {
  RecordingObserver rec;
  group_ = std::make_unique<GroupCommit>(&write_mu_, &writer_, 256, &rec);
  std::vector<GroupCommit::Work> works = {
      Insert(1),
      [](Db* db) -> Result<bool> {  // writes, then fails: rolled back alone
        COHORT_RETURN_IF_ERROR(db->Exec("INSERT INTO t (x) VALUES (2)"));
        return Status::NotFound("writer 'ghost' not found");
      },
      [](Db*) -> Result<bool> { return false; },  // discarded
      Insert(3),
  };
  RunAsOneGroup(works);
  // The first call alone, then the group of four (queued in any order).
  ASSERT_EQ(rec.log.size(), 11u);
  std::sort(rec.log.begin() + 5, rec.log.begin() + 9);
  EXPECT_EQ(rec.log, "BkC BkkrrC ");
  rec.log.clear();
  // x = -1 breaks the deferred foreign key: every call was kept, the COMMIT fails.
  RunAsOneGroup({Insert(4), Insert(-1)});
  EXPECT_EQ(rec.log, "BkC BkkL ");  // the first call alone, then the lost group
  rec.log.clear();
  // Alone: a failing or discarded call leaves nothing to lose; a failed COMMIT is lost.
  EXPECT_FALSE(group_->Run([](Db*) -> Result<bool> { return Status::NotFound("x"); }).ok());
  EXPECT_TRUE(group_->Run([](Db*) -> Result<bool> { return false; }).ok());
  EXPECT_FALSE(group_->Run(Insert(-1)).ok());
  EXPECT_EQ(rec.log, "BrC BrC BkL ");
  EXPECT_EQ(Committed(4), 0);
}

}  // namespace
}  // namespace cohort::store::sqlite
