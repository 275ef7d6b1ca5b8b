#include "server/api/heartbeat_coalescer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "store/sqlite/sqlite_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using store::RunRef;

// A real SQLite store in a fresh temporary directory, with run "r1" (writers "a" and "b") and
// run "r2" (writer "c"), all last seen at kJoined or earlier. Single-threaded set-up.
class HeartbeatCoalescerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kLater = int64_t(4) << 40;  // far after any join time

  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "cohort-hb-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto opened = store::SqliteStore::Open(store::SqliteOptions{.path = (dir_ / "t.db").string()});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    for (const char* run : {"r1", "r2"}) {
      ASSERT_TRUE(store_->UpsertRun(store::RunUpsert{.ref = Ref(run)}).ok());
    }
    for (auto [run, label] : {std::pair{"r1", "a"}, {"r1", "b"}, {"r2", "c"}}) {
      ASSERT_TRUE(store_->JoinWriter(Ref(run), store::WriterJoin{.label = label}).ok());
    }
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static RunRef Ref(const std::string& run) { return RunRef{"e", "p", run}; }

  // The writer's last-seen time in the store.
  int64_t Stored(const std::string& run, const std::string& label) {
    auto ws = store_->ListWriters(Ref(run));
    if (!ws.ok()) return -1;
    for (const auto& w : *ws) {
      if (w.label == label) return w.heartbeat_ms;
    }
    return -1;
  }

  fs::path dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

TEST_F(HeartbeatCoalescerTest, HeartbeatsAreWrittenTogetherOnFlush) {
  HeartbeatCoalescer hb(store_.get());
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater).ok());
  ASSERT_TRUE(hb.Record(Ref("r1"), "b", kLater + 1).ok());
  ASSERT_TRUE(hb.Record(Ref("r2"), "c", kLater + 2).ok());
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater + 3).ok());
  EXPECT_EQ(hb.pending(), 3u);
  EXPECT_LT(Stored("r1", "a"), kLater);  // answered, not yet written
  const auto before = store_->group_counters().transactions;
  ASSERT_TRUE(hb.Flush().ok());
  EXPECT_EQ(store_->group_counters().transactions, before + 1);  // one transaction for all
  EXPECT_EQ(hb.pending(), 0u);
  EXPECT_EQ(Stored("r1", "a"), kLater + 3);  // the latest of a's two
  EXPECT_EQ(Stored("r1", "b"), kLater + 1);
  EXPECT_EQ(Stored("r2", "c"), kLater + 2);
  auto run = store_->GetRun(Ref("r1"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->heartbeat_ms, kLater + 3);
}

TEST_F(HeartbeatCoalescerTest, HeartbeatTimeNeverMovesBack) {
  HeartbeatCoalescer hb(store_.get());
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater + 10).ok());
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater).ok());  // an older one arriving late
  ASSERT_TRUE(hb.Flush().ok());
  EXPECT_EQ(Stored("r1", "a"), kLater + 10);
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater + 5).ok());
  ASSERT_TRUE(hb.Flush().ok());
  EXPECT_EQ(Stored("r1", "a"), kLater + 10);
}

TEST_F(HeartbeatCoalescerTest, UnknownWriterOrRunIsNotFound) {
  HeartbeatCoalescer hb(store_.get());
  Status ghost = hb.Record(Ref("r1"), "ghost", kLater);
  EXPECT_EQ(ghost.code(), StatusCode::kNotFound);
  EXPECT_NE(ghost.message().find("ghost"), std::string::npos) << ghost.ToString();
  EXPECT_EQ(hb.Record(Ref("nope"), "a", kLater).code(), StatusCode::kNotFound);
  EXPECT_EQ(hb.pending(), 0u);
  // A writer that joins later is found (the first read of r1 knew only a and b).
  ASSERT_TRUE(store_->JoinWriter(Ref("r1"), store::WriterJoin{.label = "late"}).ok());
  ASSERT_TRUE(hb.Record(Ref("r1"), "late", kLater).ok());
  ASSERT_TRUE(hb.Flush().ok());
  EXPECT_EQ(Stored("r1", "late"), kLater);
}

TEST_F(HeartbeatCoalescerTest, WriterOfADeletedRunIsNotFoundAfterTheNextFlush) {
  HeartbeatCoalescer hb(store_.get());
  ASSERT_TRUE(hb.Record(Ref("r2"), "c", kLater).ok());
  ASSERT_TRUE(hb.Flush().ok());
  ASSERT_TRUE(store_->DeleteRun(Ref("r2")).ok());
  // Still known: answered from memory, then skipped by the store when written.
  ASSERT_TRUE(hb.Record(Ref("r2"), "c", kLater + 1).ok());
  ASSERT_TRUE(hb.Flush().ok());
  EXPECT_EQ(hb.Record(Ref("r2"), "c", kLater + 2).code(), StatusCode::kNotFound);
  // Writers of other runs are unaffected.
  ASSERT_TRUE(hb.Record(Ref("r1"), "a", kLater).ok());
}

TEST_F(HeartbeatCoalescerTest, FlusherWritesWithinItsInterval) {
  HeartbeatCoalescer hb(store_.get(), /*flush_interval_ms=*/20);
  hb.Start();
  ASSERT_TRUE(hb.Record(Ref("r1"), "b", kLater).ok());
  for (int i = 0; i < 500 && Stored("r1", "b") != kLater; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Stored("r1", "b"), kLater);
  EXPECT_GE(hb.flushes(), 1);
  hb.Stop();
}

TEST_F(HeartbeatCoalescerTest, StopWritesWhatIsPending) {
  {
    HeartbeatCoalescer hb(store_.get(), /*flush_interval_ms=*/3600 * 1000);
    hb.Start();
    ASSERT_TRUE(hb.Record(Ref("r2"), "c", kLater).ok());
  }  // destroyed: stops and flushes
  EXPECT_EQ(Stored("r2", "c"), kLater);
}

}  // namespace
}  // namespace cohort::api
