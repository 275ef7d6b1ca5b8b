#include "agent/sync.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "agent/agent_log.h"
#include "agent/fake_cohort_server_for_test.h"
#include "agent/writer_stream.h"
#include "core/batch_format.h"
#include "core/clock.h"
#include "wal/fault_file_system.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using testing::FakeCohortServer;

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kError);
    char tmpl[] = "/tmp/cohort-sync-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root_); }

  // An offline writer's WAL as the agent leaves it: upsert, join, `batches` batches of 10
  // points, and a finish record when `finished`.
  std::string MakeOfflineWriter(const std::string& label, int batches, bool finished) {
    WriterTarget t;
    t.base_url = "http://127.0.0.1:1";  // recorded server: unreachable; sync retargets
    t.api_key = "ck_old";
    t.project = "p";
    t.run_id = "run1";
    t.label = label;
    t.offline = true;
    std::string dir = root_ + "/run1/" + label;
    auto s = WriterStream::Create(dir, t);
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kRunUpsert, 1, 0, R"({"id":"run1"})").ok());
    EXPECT_TRUE((*s)->Append(RecordKind::kWriterJoin, 1, 0, "{\"label\":\"" + label + "\"}").ok());
    for (int i = 0; i < batches; ++i) {
      batch::Batch b;
      for (int k = 0; k < 10; ++k) {
        b.keys.push_back("k" + std::to_string(k));
        b.cells.push_back({uint32_t(k), double(i * 10 + k)});
      }
      b.history.push_back({.step = i, .time_ms = 1, .begin = 0, .count = 10});
      std::string body;
      batch::Encode(b, &body);
      EXPECT_TRUE((*s)->Append(RecordKind::kBatch, 1, uint64_t(i + 1), body).ok());
    }
    if (finished) {
      EXPECT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 999, R"({"exit_code":0})").ok());
    }
    EXPECT_TRUE((*s)->Close().ok());
    return dir;
  }

  // Records in `dir`'s clients.json that session 1's client runs, as a process that has ended
  // since (an earlier process that had this pid): what an agent killed with its client leaves.
  static void RecordEndedClientRunning(const std::string& dir) {
    auto s = WriterStream::OpenExisting(dir);
    ASSERT_TRUE(s.ok());
    ClientProcess ended = *ClientProcess::Find(getpid());
    ended.start_ticks += 1;
    ASSERT_TRUE((*s)->ClientRunning(1, ended).ok());
    ASSERT_TRUE((*s)->Close().ok());
  }

  SyncOptions Options(const FakeCohortServer& server) { return Options(server.url(), 10); }
  static SyncOptions Options(const std::string& url, double give_up_after_s) {
    SyncOptions o;
    o.base_url = url;
    o.api_key = "ck_new";
    o.progress = false;
    o.give_up_after_s = give_up_after_s;
    return o;
  }

  std::string root_;
};

TEST_F(SyncTest, UploadsFinishedWritersAndRemovesThem) {
  FakeCohortServer server;
  MakeOfflineWriter("rank_0", 5, true);
  MakeOfflineWriter("rank_1", 3, true);
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->errors.empty()) << report->errors[0];
  EXPECT_EQ(report->writers, 2);
  EXPECT_EQ(report->uploaded, 2);
  EXPECT_EQ(report->removed, 2);
  EXPECT_EQ(report->points, 80);
  EXPECT_EQ(server.point_count("rank_0"), 50u);
  EXPECT_EQ(server.point_count("rank_1"), 30u);
  EXPECT_EQ(server.writers().at("rank_0").state, "finished");
  EXPECT_EQ(server.http().requests()[0].authorization, "Bearer ck_new");
  EXPECT_FALSE(fs::exists(root_ + "/run1"));
}

// A writer left by an agent killed with its client (its session never finished, the client's
// process recorded running and ended since): sync records the writer crashed, uploads it and
// removes it. (It was uploaded and kept, the writer running on the server, at every sync.)
TEST_F(SyncTest, AWriterWhoseClientEndedUnwatchedIsRecordedCrashedAndRemoved) {
  FakeCohortServer server;
  const std::string dir = MakeOfflineWriter("rank_0", 3, false);
  RecordEndedClientRunning(dir);
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->errors.empty()) << report->errors[0];
  EXPECT_EQ(report->removed, 1);
  EXPECT_EQ(server.writers().at("rank_0").state, "crashed");
  EXPECT_EQ(server.point_count("rank_0"), 30u);
  EXPECT_FALSE(fs::exists(dir));
}

// The same with the writer's finish in the WAL (the agent stopped between the finish and the
// rewrite of clients.json): it stays finished, not crashed.
TEST_F(SyncTest, AFinishedWritersLeftoverRunningEntryDoesNotMakeItCrashed) {
  FakeCohortServer server;
  const std::string dir = MakeOfflineWriter("rank_0", 2, true);
  RecordEndedClientRunning(dir);
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->errors.empty()) << report->errors[0];
  EXPECT_EQ(report->removed, 1);
  EXPECT_EQ(server.writers().at("rank_0").state, "finished");
}

TEST_F(SyncTest, SecondSyncSendsNothingAgain) {
  FakeCohortServer server;
  MakeOfflineWriter("rank_0", 4, false);  // never finished: the directory stays
  auto first = RunSync({root_}, Options(server));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->uploaded, 1);
  EXPECT_EQ(first->removed, 0);
  size_t requests = server.http().requests().size();
  auto second = RunSync({root_ + "/run1/rank_0"}, Options(server));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->writers, 1);
  EXPECT_EQ(second->records, 0);
  EXPECT_EQ(server.http().requests().size(), requests);
  EXPECT_EQ(server.point_count("rank_0"), 40u);
  EXPECT_EQ(server.overwritten_points(), 0);
}

TEST_F(SyncTest, InterruptedSyncIsResumedWithoutDuplicates) {
  MakeOfflineWriter("rank_0", 6, true);
  {
    // A server that stops answering after 3 batches, as if the sync were interrupted.
    int batches = 0;
    testing::FakeHttpServer flaky([&](const testing::FakeRequest& r) -> testing::FakeResponse {
      if (r.path.ends_with("/batches") && ++batches > 3) return {503, "{}", {}};
      if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice"})", {}};
      return {200, R"({"next_step":0})", {}};
    });
    auto report = RunSync({root_}, Options(flaky.url(), 1));
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->uploaded, 0);
    EXPECT_FALSE(report->errors.empty());
  }
  FakeCohortServer server;
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->uploaded, 1);
  // The first three batches were acknowledged before: they are not sent again.
  EXPECT_EQ(server.point_count("rank_0"), 30u);
}

// A key the server refuses (revoked, mistyped) stops the sync and drops nothing: a second sync
// with a key it accepts uploads every record. (It dropped the writer's records and acked them.)
TEST_F(SyncTest, AKeyTheServerRefusesKeepsEveryRecordForTheNextSync) {
  MakeOfflineWriter("rank_0", 5, true);
  for (int code : {401, 403}) {
    testing::FakeHttpServer refusing([&](const testing::FakeRequest&) -> testing::FakeResponse {
      return {code, R"({"error":{"code":"unauthenticated","message":"bad key"}})", {}};
    });
    SyncOptions o = Options(refusing.url(), 10);
    o.api_key = "ck_wrong";
    auto report = RunSync({root_}, o);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->uploaded, 0);
    ASSERT_EQ(report->errors.size(), 1u);
    EXPECT_NE(report->errors[0].find("kept"), std::string::npos) << report->errors[0];
    EXPECT_TRUE(fs::exists(root_ + "/run1/rank_0"));
  }
  FakeCohortServer server;
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->errors.empty()) << report->errors[0];
  EXPECT_EQ(report->uploaded, 1);
  EXPECT_EQ(server.point_count("rank_0"), 50u);
}

// A proxy in front of the server that answers a redirect (http -> https, a moved host) is no
// refusal of the records: retried, and kept when the sync gives up. (A 3xx dropped the writer.)
TEST_F(SyncTest, ARedirectIsRetriedNotTakenForARefusal) {
  MakeOfflineWriter("rank_0", 3, true);
  {
    testing::FakeHttpServer redirecting(
        [&](const testing::FakeRequest& r) -> testing::FakeResponse {
          if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice"})", {}};
          return {308, "", {{"Location", "https://cohort.example/"}}};
        });
    auto report = RunSync({root_}, Options(redirecting.url(), 1));
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->uploaded, 0);
    EXPECT_FALSE(report->errors.empty());
  }
  FakeCohortServer server;
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->uploaded, 1);
  EXPECT_EQ(server.point_count("rank_0"), 30u);
}

// An uploaded, finished writer whose FINISHED marker cannot be written (EIO) is reported and
// kept whole (every record is on the server: nothing is lost); the next sync sends nothing again
// and removes it.
TEST_F(SyncTest, AWriterThatCannotBeRemovedIsReportedAndRemovedByTheNextSync) {
  FakeCohortServer server;
  const std::string dir = MakeOfflineWriter("rank_0", 3, true);
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  faults.FailWrite(1, EIO, 0, /*sticky=*/true, WriterStream::kFinishedMarker);
  SyncOptions o = Options(server);
  o.fs = &faults;
  auto first = RunSync({root_}, o);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->uploaded, 1);
  EXPECT_EQ(first->removed, 0);
  ASSERT_EQ(first->errors.size(), 1u);
  EXPECT_NE(first->errors[0].find("not removed"), std::string::npos) << first->errors[0];
  EXPECT_NE(first->errors[0].find("FINISHED"), std::string::npos) << first->errors[0];
  EXPECT_TRUE(fs::exists(dir + "/meta.json"));
  EXPECT_EQ(server.point_count("rank_0"), 30u);
  const size_t requests = server.http().requests().size();

  faults.ClearFaults();
  auto second = RunSync({root_}, o);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->errors.empty()) << second->errors[0];
  EXPECT_EQ(second->removed, 1);
  EXPECT_EQ(second->records, 0);
  EXPECT_EQ(server.http().requests().size(), requests);
  EXPECT_FALSE(fs::exists(root_ + "/run1"));
}

TEST_F(SyncTest, MissingPathIsAnError) {
  auto report = RunSync({root_ + "/nope"}, {});
  EXPECT_EQ(report.status().code(), StatusCode::kNotFound);
}

// A PATH under which there is nothing to upload (the wrong directory, one level too high, a
// file) said "0 writer(s), 0 uploaded" and succeeded.
TEST_F(SyncTest, APathWithoutWriterDirectoriesIsAnErrorNamingIt) {
  fs::create_directories(root_ + "/empty");
  std::FILE* f = std::fopen((root_ + "/file").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  // A writer four levels down: too deep under root_.
  fs::create_directories(root_ + "/high/data/run1/rank_0");
  std::FILE* meta = std::fopen((root_ + "/high/data/run1/rank_0/meta.json").c_str(), "w");
  ASSERT_NE(meta, nullptr);
  std::fclose(meta);
  for (const std::string& path : {root_ + "/empty", root_ + "/file", root_}) {
    auto report = RunSync({path}, Options("http://127.0.0.1:1", 1));
    ASSERT_FALSE(report.ok()) << path;
    EXPECT_EQ(report.status().code(), StatusCode::kNotFound);
    EXPECT_NE(report.status().message().find("no writer directories under " + path),
              std::string::npos)
        << report.status().ToString();
    EXPECT_NE(report.status().message().find("meta.json"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(root_ + "/empty/%artifacts"));  // nothing made in the wrong place
}

// An agent's data directory whose writers are all uploaded has nothing left: no error.
TEST_F(SyncTest, AnAgentDataDirWithNoWriterLeftIsNoError) {
  fs::create_directories(root_ + "/%artifacts");
  auto report = RunSync({root_}, Options("http://127.0.0.1:1", 1));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->writers, 0);
  EXPECT_TRUE(report->errors.empty());
}

// On a non-terminal (a log file, a pipe) the progress was a bar redrawn with '\r' every 100 ms.
TEST_F(SyncTest, ProgressOnANonTerminalHasNoCarriageReturns) {
  FakeCohortServer server;
  MakeOfflineWriter("rank_0", 4, true);
  const std::string log = root_ + "/stderr.txt";
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  dup2(fd, STDERR_FILENO);
  close(fd);
  SyncOptions o = Options(server);
  o.progress = true;
  auto report = RunSync({root_ + "/run1"}, o);
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->uploaded, 1);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
}

TEST_F(SyncTest, WriterHeldByALiveProcessIsSkipped) {
  FakeCohortServer server;
  WriterTarget t;
  t.base_url = server.url();
  t.project = "p";
  t.run_id = "run1";
  t.label = "busy";
  auto held = WriterStream::Create(root_ + "/run1/busy", t);
  ASSERT_TRUE(held.ok());
  // Its training process (this one) runs: skipped at once, not waited for.
  ASSERT_TRUE((*held)->ClientRunning(1, *ClientProcess::Find(getpid())).ok());
  const int64_t start = NowMillis();
  auto report = RunSync({root_}, Options(server));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->skipped_in_use, 1);
  EXPECT_LT(NowMillis() - start, 5000);
  ASSERT_EQ(report->errors.size(), 1u);
  EXPECT_NE(report->errors[0].find("retry in a moment"), std::string::npos) << report->errors[0];
}

// `python train.py && cohort sync`: the agent holds the writer a moment after the training
// process ended (none alive in clients.json); sync waits for it instead of skipping it.
TEST_F(SyncTest, WriterHeldByAnAgentWhoseClientEndedIsWaitedFor) {
  FakeCohortServer server;
  const std::string dir = MakeOfflineWriter("ending", 3, true);
  RecordEndedClientRunning(dir);
  auto held = WriterStream::OpenExisting(dir);  // the agent, letting go of it in a moment
  ASSERT_TRUE(held.ok());
  std::thread agent([&held] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    (void)(*held)->Close();
  });
  auto report = RunSync({root_}, Options(server));
  agent.join();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->skipped_in_use, 0);
  EXPECT_EQ(report->uploaded, 1);
  EXPECT_TRUE(report->errors.empty()) << report->errors[0];
}

// An agent holding many writers whose clients ended (say, to upload them while the server is
// down) and not letting go: sync waited release_wait_s for each in turn (30 writers: 5 minutes).
// The wait is now one deadline for the whole sync.
TEST_F(SyncTest, HeldWritersShareOneReleaseDeadline) {
  FakeCohortServer server;
  std::vector<Result<std::shared_ptr<WriterStream>>> held;
  for (const char* label : {"held_a", "held_b", "held_c"}) {
    const std::string dir = MakeOfflineWriter(label, 2, true);
    RecordEndedClientRunning(dir);
    held.push_back(WriterStream::OpenExisting(dir));  // the agent, keeping it
    ASSERT_TRUE(held.back().ok());
  }
  SyncOptions o = Options(server);
  o.release_wait_s = 1.5;
  const int64_t start = NowMillis();
  auto report = RunSync({root_}, o);
  const int64_t took = NowMillis() - start;
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->skipped_in_use, 3);
  EXPECT_GE(took, 1400);  // waited for the first
  EXPECT_LT(took, 2900);  // not 4.5 s: the others were not waited for again
  ASSERT_EQ(report->errors.size(), 3u);
  for (const std::string& e : report->errors) {
    EXPECT_NE(e.find("retry in a moment"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace cohort::agent
