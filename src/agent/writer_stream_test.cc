#include "agent/writer_stream.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>

#include "core/clock.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

class WriterStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-ws-XXXXXX";
    root_ = mkdtemp(tmpl);
    dir_ = root_ + "/run1/rank_0";
    target_.base_url = "http://127.0.0.1:1";
    target_.project = "p";
    target_.run_id = "run1";
    target_.label = "rank_0";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_, dir_;
  WriterTarget target_;
};

TEST_F(WriterStreamTest, SeqsIncreaseAndStartFromTheClock) {
  int64_t before = NowMillis();
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto a = (*s)->Append(RecordKind::kRunUpsert, 1, 1, "{}");
  auto b = (*s)->Append(RecordKind::kBatch, 1, 2, "x");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(*a, uint64_t(before) << 20);
  EXPECT_EQ(*b, *a + 1);
}

TEST_F(WriterStreamTest, ReopenKeepsUnacknowledgedRecordsAndFrames) {
  uint64_t last_seq = 0;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Append(RecordKind::kRunUpsert, 7, 1, "{}").ok());
    last_seq = *(*s)->Append(RecordKind::kBatch, 7, 5, "x");
    ASSERT_TRUE((*s)->Sync().ok());
    ASSERT_TRUE((*s)->Close().ok());
  }
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->target().run_id, "run1");
  EXPECT_EQ((*s)->LastFrame(7), 5u);
  EXPECT_EQ((*s)->LastFrame(8), 0u);
  EXPECT_EQ((*s)->progress().appended_seq, last_seq);
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_EQ(rec->kind, RecordKind::kRunUpsert);
  (*s)->Pop();
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_EQ(rec->seq, last_seq);
  // New records continue above the old ones.
  auto next = (*s)->Append(RecordKind::kBatch, 9, 1, "y");
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, last_seq);
}

TEST_F(WriterStreamTest, SeqsStayAboveThePersistedFloorWhenTheClockIsBehind) {
  uint64_t last = 0;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    last = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
    ASSERT_TRUE((*s)->Close().ok());
  }
  // What an earlier run of this stream (or a clock a year ahead then) left as its floor.
  const uint64_t floor = uint64_t(NowMillis() + 365LL * 24 * 3600 * 1000) << 20;
  ASSERT_GT(floor, last);
  {
    std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "{\"floor\": %llu}", static_cast<unsigned long long>(floor));
    std::fclose(f);
  }
  {
    auto s = WriterStream::OpenExisting(dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    last = *(*s)->Append(RecordKind::kBatch, 1, 2, "y");
    EXPECT_GE(last, floor);
    ASSERT_TRUE((*s)->Close().ok());
  }
  // The stream's own floor (not the clock) carries the next opening above `last`.
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(*(*s)->Append(RecordKind::kBatch, 1, 3, "z"), last);
}

TEST_F(WriterStreamTest, AcknowledgingRecordsPersistsAFloorAboveThem) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  uint64_t seq = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
  ASSERT_TRUE((*s)->Sync().ok());
  EXPECT_FALSE(fs::exists(dir_ + "/seq.json"));  // opening and appending write nothing more
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  (*s)->Pop();
  ASSERT_TRUE((*s)->FlushAcks(true).ok());
  std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "r");
  ASSERT_NE(f, nullptr);
  unsigned long long floor = 0;
  EXPECT_EQ(std::fscanf(f, "{\"floor\":%llu", &floor), 1);
  std::fclose(f);
  EXPECT_GT(floor, seq);  // the WAL no longer holds `seq`; the floor stands for it
}

TEST_F(WriterStreamTest, DamagedSeqFileStillOpensAndKeepsPendingSeqs) {
  uint64_t join = 0, batch = 0;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    join = *(*s)->Append(RecordKind::kWriterJoin, 1, 0, "{}");
    batch = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
    ASSERT_TRUE((*s)->Close().ok());
  }
  std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"floor\": \"many\"}", f);
  std::fclose(f);
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // The pending records may have been sent already: they keep their seqs whatever the join says.
  ASSERT_TRUE((*s)->NoteJoined(join, batch + 100).ok());
  EXPECT_EQ((*s)->UploadSeq(batch), batch);
  EXPECT_GT(*(*s)->Append(RecordKind::kBatch, 1, 2, "y"), batch);
}

TEST_F(WriterStreamTest, JoinLiftsUploadSeqsAboveServerLastSeqAndKeepsItAcrossReopen) {
  uint64_t join = 0, batch = 0, uploaded = 0;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    join = *(*s)->Append(RecordKind::kWriterJoin, 1, 0, "{}");
    batch = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
    ASSERT_TRUE((*s)->Sync().ok());
    EXPECT_EQ((*s)->UploadSeq(batch), batch);
    // A writer of this label (another directory, a clock far ahead) left seq join + 10^9.
    const uint64_t server_last = join + 1000000000;
    ASSERT_TRUE((*s)->NoteJoined(join, server_last).ok());
    uploaded = (*s)->UploadSeq(batch);
    EXPECT_GT(uploaded, server_last);
    ASSERT_TRUE((*s)->Close().ok());  // a crash after the batch was stored, before its ack
  }
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok());
  // The join is re-sent; the server now holds the batch at `uploaded`. The retry must reuse it.
  ASSERT_TRUE((*s)->NoteJoined(join, uploaded).ok());
  EXPECT_EQ((*s)->UploadSeq(batch), uploaded);
  // A later join whose server holds less keeps the offset (seqs never go down).
  uint64_t join2 = *(*s)->Append(RecordKind::kWriterJoin, 2, 0, "{}");
  uint64_t batch2 = *(*s)->Append(RecordKind::kBatch, 2, 1, "y");
  ASSERT_TRUE((*s)->NoteJoined(join2, 0).ok());
  EXPECT_GT((*s)->UploadSeq(batch2), uploaded);
}

// A confirmed join whose offset stands costs the client's Init no file write; the join that
// decided the offset is on disk before the record after it can be uploaded (else a re-sent
// join after a crash would lift the already-uploaded batches again, storing them twice).
TEST_F(WriterStreamTest, ConfirmedJoinIsPersistedBeforeTheNextRecordIsPeeked) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  uint64_t join = *(*s)->Append(RecordKind::kWriterJoin, 1, 0, "{}");
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  ASSERT_EQ(rec->seq, join);
  ASSERT_TRUE((*s)->NoteJoined(join, 0).ok());
  (*s)->Pop();
  EXPECT_FALSE(fs::exists(dir_ + "/seq.json"));
  ASSERT_TRUE(*(*s)->Peek(&rec));
  ASSERT_NE(rec->seq, join);
  std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  EXPECT_NE(std::string(buf, n).find("\"joined_seq\":" + std::to_string(join)), std::string::npos)
      << std::string(buf, n);
}

TEST_F(WriterStreamTest, JoinBelowTheStreamKeepsSeqsUnchanged) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  uint64_t join = *(*s)->Append(RecordKind::kWriterJoin, 1, 0, "{}");
  uint64_t batch = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
  ASSERT_TRUE((*s)->NoteJoined(join, join - 5).ok());
  EXPECT_EQ((*s)->UploadSeq(batch), batch);
}

TEST_F(WriterStreamTest, AcknowledgedRecordsAreNotReadAgain) {
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Append(RecordKind::kRunUpsert, 1, 1, "{}").ok());
    ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 2, "x").ok());
    ASSERT_TRUE((*s)->Sync().ok());
    const Record* rec = nullptr;
    ASSERT_TRUE(*(*s)->Peek(&rec));
    (*s)->Pop();
    ASSERT_TRUE((*s)->FlushAcks(true).ok());
    ASSERT_TRUE((*s)->Close().ok());
  }
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok());
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_EQ(rec->kind, RecordKind::kBatch);
  EXPECT_EQ(rec->frame, 2u);
}

TEST_F(WriterStreamTest, PeekNextReadsAheadWithoutAcknowledging) {
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    for (uint64_t f = 1; f <= 3; ++f) {
      ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, f, "x" + std::to_string(f)).ok());
    }
    ASSERT_TRUE((*s)->Sync().ok());
    const Record* rec = nullptr;
    const Record* next = nullptr;
    EXPECT_FALSE(*(*s)->PeekNext(&next));  // nothing peeked yet
    ASSERT_TRUE(*(*s)->Peek(&rec));
    EXPECT_EQ(rec->frame, 1u);
    ASSERT_TRUE(*(*s)->PeekNext(&next));
    EXPECT_EQ(next->frame, 2u);
    EXPECT_EQ(next->body, "x2");
    const Record* again = nullptr;
    ASSERT_TRUE(*(*s)->PeekNext(&again));
    EXPECT_EQ(again, next);  // read once
    ASSERT_TRUE(*(*s)->Peek(&rec));
    EXPECT_EQ(rec->frame, 1u);  // Peek still answers the first
    (*s)->Pop();
    EXPECT_EQ((*s)->progress().done_records, 1);
    ASSERT_TRUE(*(*s)->Peek(&rec));
    EXPECT_EQ(rec->frame, 2u);  // the one read ahead
    EXPECT_EQ(rec->body, "x2");
    ASSERT_TRUE(*(*s)->PeekNext(&next));
    EXPECT_EQ(next->frame, 3u);
    ASSERT_TRUE((*s)->FlushAcks(true).ok());
    ASSERT_TRUE((*s)->Close().ok());
  }
  // Only the popped record was acknowledged: the ones read ahead come back.
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok());
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_EQ(rec->frame, 2u);
}

TEST_F(WriterStreamTest, PeekNextSeesARecordSyncedLater) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "a").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  const Record* rec = nullptr;
  const Record* next = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_FALSE(*(*s)->PeekNext(&next));
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 2, "b").ok());
  EXPECT_FALSE(*(*s)->PeekNext(&next));  // not durable yet
  ASSERT_TRUE((*s)->Sync().ok());
  ASSERT_TRUE(*(*s)->PeekNext(&next));
  EXPECT_EQ(next->frame, 2u);
  (*s)->Pop();
  ASSERT_TRUE(*(*s)->Peek(&rec));
  EXPECT_EQ(rec->body, "b");
  (*s)->Pop();
  EXPECT_FALSE(*(*s)->Peek(&rec));
  EXPECT_EQ((*s)->progress().done_records, 2);
}

TEST_F(WriterStreamTest, UnsyncedRecordsAreNotPeeked) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
  const Record* rec = nullptr;
  EXPECT_FALSE(*(*s)->Peek(&rec));
  ASSERT_TRUE((*s)->Sync().ok());
  EXPECT_TRUE(*(*s)->Peek(&rec));
}

TEST_F(WriterStreamTest, CompleteAfterFinishIsDone) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 2, "{}").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  (*s)->Pop();
  EXPECT_FALSE((*s)->progress().complete);
  ASSERT_TRUE(*(*s)->Peek(&rec));
  (*s)->Pop();
  EXPECT_TRUE((*s)->progress().complete);
}

TEST_F(WriterStreamTest, SecondOpenOfSameDirectoryIsRefused) {
  auto a = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(a.ok());
  auto b = WriterStream::OpenExisting(dir_);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(WriterStreamTest, RemoveDeletesWriterAndEmptyRunDirectory) {
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Remove().ok());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_FALSE(fs::exists(root_ + "/run1"));
}

TEST_F(WriterStreamTest, MetaFileIsPrivate) {
  target_.api_key = "ck_secret";
  auto s = WriterStream::Create(dir_, target_);
  ASSERT_TRUE(s.ok());
  auto perms = fs::status(dir_ + "/meta.json").permissions();
  EXPECT_EQ(perms & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

}  // namespace
}  // namespace cohort::agent
