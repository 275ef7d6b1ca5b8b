// WriterStream: what a session stored (its last frame) across uploads, acknowledgements,
// deleted segments and reopenings, and the clients away that keep a writer directory.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "agent/writer_stream.h"
#include "wal/format.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

class WriterStreamClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-wsc-XXXXXX";
    root_ = mkdtemp(tmpl);
    dir_ = root_ + "/run1/rank_0";
    target_.base_url = "http://127.0.0.1:1";
    target_.project = "p";
    target_.run_id = "run1";
    target_.label = "rank_0";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::shared_ptr<WriterStream> Create() {
    auto s = WriterStream::Create(dir_, target_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : nullptr;
  }
  std::shared_ptr<WriterStream> Reopen(std::shared_ptr<WriterStream>* s) {
    EXPECT_TRUE((*s)->Close().ok());
    s->reset();
    auto r = WriterStream::OpenExisting(dir_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : nullptr;
  }
  // As the Sender does: every durable record uploaded in order, acknowledged after each.
  static void UploadAll(WriterStream* s) {
    const Record* rec = nullptr;
    while (true) {
      auto got = s->Peek(&rec);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      if (!*got) break;
      s->Pop();
      ASSERT_TRUE(s->FlushAcks(true).ok());
    }
  }
  // The client of `session` went away (the writer's crashed finish); what the stream did.
  static WriterStream::Gone ClientGone(WriterStream* s, uint64_t session,
                                       const std::optional<ClientProcess>& process) {
    WriterStream::Gone gone = WriterStream::Gone::kBack;
    Status st = s->ClientGone(session, process, R"({"state":"crashed"})", &gone);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return gone;
  }
  std::vector<uint64_t> Segments() const {
    std::vector<uint64_t> out;
    for (const auto& e : fs::directory_iterator(dir_ + "/" + WriterStream::kWalDir)) {
      uint64_t n = 0;
      if (wal::ParseSegmentFileName(e.path().filename().string(), &n)) out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string root_, dir_;
  WriterTarget target_;
};

TEST_F(WriterStreamClientsTest, AFrameOfASessionIsStoredOnce) {
  auto s = Create();
  ASSERT_TRUE(s);
  EXPECT_TRUE(*s->AppendFrame(RecordKind::kBatch, 7, 1, "a"));
  EXPECT_TRUE(*s->AppendFrame(RecordKind::kRunPatch, 7, 2, "{}"));
  // Two connections of the client overlapping: the second one resends what the first stored.
  EXPECT_FALSE(*s->AppendFrame(RecordKind::kBatch, 7, 1, "a"));
  EXPECT_FALSE(*s->AppendFrame(RecordKind::kBatch, 7, 2, "b"));
  EXPECT_TRUE(*s->AppendFrame(RecordKind::kBatch, 8, 1, "other session"));
  EXPECT_TRUE(*s->AppendFrame(RecordKind::kBatch, 7, 3, "c"));
  EXPECT_EQ(s->progress().appended_records, 4);
  ASSERT_TRUE(s->Sync().ok());
  UploadAll(s.get());
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_FALSE(*s->AppendFrame(RecordKind::kBatch, 7, 3, "c"));
  EXPECT_TRUE(*s->AppendFrame(RecordKind::kBatch, 7, 4, "d"));
}

TEST_F(WriterStreamClientsTest, LastFrameOfUploadedRecordsSurvivesReopening) {
  auto s = Create();
  ASSERT_TRUE(s);
  for (uint64_t f = 1; f <= 3; ++f) ASSERT_TRUE(s->Append(RecordKind::kBatch, 7, f, "x").ok());
  ASSERT_TRUE(s->Sync().ok());
  UploadAll(s.get());
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->progress().appended_records, 0);  // nothing left to upload
  EXPECT_EQ(s->LastFrame(7), 3u);
}

TEST_F(WriterStreamClientsTest, LastFrameSurvivesTheDeletionOfTheSegmentsHoldingIt) {
  auto s = Create();
  ASSERT_TRUE(s);
  const std::string mib(1 << 20, 'x');  // segments are 16 MiB: 20 records fill more than one
  for (uint64_t f = 1; f <= 10; ++f) ASSERT_TRUE(s->Append(RecordKind::kBatch, 7, f, mib).ok());
  for (uint64_t f = 1; f <= 10; ++f) ASSERT_TRUE(s->Append(RecordKind::kBatch, 8, f, mib).ok());
  ASSERT_TRUE(s->Sync().ok());
  UploadAll(s.get());
  // Session 7's records were all in the first segment, which the acknowledgement deleted.
  ASSERT_EQ(Segments(), std::vector<uint64_t>{wal::kFirstSegment + 1});
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->LastFrame(7), 10u);
  EXPECT_EQ(s->LastFrame(8), 10u);
}

TEST_F(WriterStreamClientsTest, FramesAreSavedWhenASegmentCanGoNotForEveryAcknowledgement) {
  auto s = Create();
  ASSERT_TRUE(s);
  const std::string seq_json = dir_ + "/" + WriterStream::kSeqFile;
  ASSERT_TRUE(s->Append(RecordKind::kBatch, 7, 1, "x").ok());
  ASSERT_TRUE(s->Sync().ok());
  UploadAll(s.get());
  auto read = [&] {
    std::ifstream in(seq_json);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = read();
  EXPECT_NE(before.find(R"({"session":7,"frame":1})"), std::string::npos) << before;
  for (uint64_t f = 2; f <= 50; ++f) {
    ASSERT_TRUE(s->Append(RecordKind::kBatch, 7, f, "x").ok());
    ASSERT_TRUE(s->Sync().ok());
    UploadAll(s.get());
  }
  // All in the active segment, which is never deleted: seq.json was not rewritten.
  EXPECT_EQ(read(), before);
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->LastFrame(7), 50u);
}

TEST_F(WriterStreamClientsTest, AClientWhoseProcessRunsIsAwaitedAcrossReopeningsUntilBack) {
  auto s = Create();
  ASSERT_TRUE(s);
  s->Attach(7);
  auto self = ClientProcess::Find(getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(ClientGone(s.get(), 7, self), WriterStream::Gone::kKept);
  s->Detach(7);
  EXPECT_TRUE(s->progress().finish_appended);
  EXPECT_TRUE(fs::exists(dir_ + "/" + WriterStream::kClientsFile));
  EXPECT_TRUE(s->AwaitsLiveClient());
  UploadAll(s.get());
  EXPECT_TRUE(s->progress().complete);

  // Another agent opens the directory: the writer is finished and its client still awaited.
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->progress().complete);
  EXPECT_TRUE(s->AwaitsLiveClient());

  // The client is back: its join makes the writer run again; it is no longer awaited.
  s->Attach(7);
  ASSERT_TRUE(s->Append(RecordKind::kWriterJoin, 7, 0, "{}").ok());
  EXPECT_FALSE(s->progress().finish_appended);
  EXPECT_TRUE(*s->ClientBack(7));
  EXPECT_FALSE(*s->ClientBack(7));
  EXPECT_FALSE(s->AwaitsLiveClient());
  EXPECT_FALSE(fs::exists(dir_ + "/" + WriterStream::kClientsFile));
  ASSERT_TRUE(s->Sync().ok());
  UploadAll(s.get());
  s->Detach(7);
  s = Reopen(&s);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->progress().complete);  // the writer runs (its client will finish or crash)
}

TEST_F(WriterStreamClientsTest, AClientWhoseProcessEndedIsNotAwaited) {
  auto s = Create();
  ASSERT_TRUE(s);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto process = ClientProcess::Find(child);
  ASSERT_TRUE(process);
  s->Attach(7);
  EXPECT_EQ(ClientGone(s.get(), 7, process), WriterStream::Gone::kKept);
  s->Detach(7);
  EXPECT_TRUE(s->AwaitsLiveClient());
  kill(child, SIGKILL);
  // Its zombie (before the wait) no longer counts as running.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  std::vector<int> ended;
  EXPECT_FALSE(s->AwaitsLiveClient(&ended));
  EXPECT_EQ(ended, std::vector<int>{child});
  waitpid(child, nullptr, 0);

  // A later process with the pid of an earlier one is not that one.
  ClientProcess earlier = *ClientProcess::Find(getpid());
  earlier.start_ticks += 1;
  s->Attach(8);
  EXPECT_EQ(ClientGone(s.get(), 8, earlier), WriterStream::Gone::kCrashed);
  s->Detach(8);
  EXPECT_FALSE(s->AwaitsLiveClient());
}

TEST_F(WriterStreamClientsTest, AClientBackOnAnotherConnectionRecordsNoCrash) {
  auto s = Create();
  ASSERT_TRUE(s);
  s->Attach(7);  // the connection the client gave up on, not yet ended at the agent
  s->Attach(7);  // the one it came back on
  const int64_t before = s->progress().appended_records;
  EXPECT_EQ(ClientGone(s.get(), 7, ClientProcess::Find(getpid())), WriterStream::Gone::kBack);
  EXPECT_EQ(s->progress().appended_records, before);
  EXPECT_FALSE(s->AwaitsLiveClient());
  s->Detach(7);
  s->Detach(7);
}

}  // namespace
}  // namespace cohort::agent
