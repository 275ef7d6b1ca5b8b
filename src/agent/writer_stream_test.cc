#include "agent/writer_stream.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/clock.h"
#include "wal/fault_file_system.h"

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

// An acknowledgement whose ACK file could not be written (a full disk) stays due: the next flush
// writes it. (It was taken as written, and the ACK stayed behind until the next upload.)
TEST_F(WriterStreamTest, AnAckThatCouldNotBeWrittenIsWrittenByTheNextFlush) {
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  auto s = WriterStream::Create(dir_, target_, &faults);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
  ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 2, "y").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  const Record* rec = nullptr;
  ASSERT_TRUE(*(*s)->Peek(&rec));
  (*s)->Pop();
  faults.FailWrite(1, ENOSPC, 0, /*sticky=*/true, "ACK");
  EXPECT_FALSE((*s)->FlushAcks(true).ok());
  faults.ClearFaults();
  ASSERT_TRUE((*s)->FlushAcks(true).ok());
  ASSERT_TRUE((*s)->Close().ok());
  // Opened again, the acknowledged record is not read back: only "y" is left to upload.
  auto again = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(*(*again)->Peek(&rec));
  EXPECT_EQ(rec->body, "y");
}

// seq.json is replaced atomically, so only outside damage makes it unreadable. Then the offset
// its join decided is unknown: the stream must not strand its records, nor upload any of them at
// a seq the server may take for a retry of other data (lost). The file is set aside, seqs go on
// above the WAL's, and the next join the server acknowledges decides the offset anew, lifting
// every record after it above what the server holds.
TEST_F(WriterStreamTest, DamagedSeqFileIsSetAsideAndTheNextJoinDecidesTheOffset) {
  uint64_t join = 0, batch = 0;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    join = *(*s)->Append(RecordKind::kWriterJoin, 1, 0, "{}");
    batch = *(*s)->Append(RecordKind::kBatch, 1, 1, "x");
    // What the lost seq.json said: the join was acknowledged with a large offset (a writer of
    // this label with a clock far ahead) and the batch went out at batch + offset.
    ASSERT_TRUE((*s)->NoteJoined(join, join + 1000000).ok());
    ASSERT_GT((*s)->UploadSeq(batch), join + 1000000);
    ASSERT_TRUE((*s)->Close().ok());
  }
  std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"floor\": \"many\"}", f);
  std::fclose(f);
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(fs::exists(dir_ + "/seq.json.corrupt"));
  EXPECT_FALSE(fs::exists(dir_ + "/seq.json"));
  // The join is sent again; the server holds the batch at its old upload seq: the batch goes
  // above it (stored twice at worst, never dropped as a duplicate of something else).
  const uint64_t server_last = join + 1000000 + (batch - join);
  ASSERT_TRUE((*s)->NoteJoined(join, server_last).ok());
  EXPECT_GT((*s)->UploadSeq(batch), server_last);
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

// The stream id the Sender sends with each batch (Cohort-Batch-Ordered) is made with the
// directory (meta.json: a copy of the directory, or a client joining it again, keeps it),
// survives a reopen, and is new after a damaged seq.json (the offset is lost with it: records
// numbered anew must not be taken for the ones the server holds under the old id); that new id
// is written to seq.json before a batch goes out (SaveStreamId) and wins over meta.json's.
TEST_F(WriterStreamTest, StreamIdComesWithTheDirectoryAndIsNewAfterADamagedSeqFile) {
  auto read_file = [&](const std::string& name) {
    std::FILE* f = std::fopen((dir_ + "/" + name).c_str(), "r");
    if (f == nullptr) return std::string();
    char buf[2048] = {};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    return std::string(buf, n);
  };
  auto reopened_id = [&] {
    auto s = WriterStream::OpenExisting(dir_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return std::string();
    std::string id = (*s)->stream_id();
    EXPECT_TRUE((*s)->SaveStreamId().ok());
    EXPECT_TRUE((*s)->Close().ok());
    return id;
  };
  std::string id;
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    id = (*s)->stream_id();
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_NE(read_file("meta.json").find("\"stream_id\":\"" + id + "\""), std::string::npos);
    ASSERT_TRUE((*s)->SaveStreamId().ok());
    EXPECT_FALSE(fs::exists(dir_ + "/seq.json"));  // meta.json holds it: no write needed
    ASSERT_TRUE((*s)->Close().ok());
  }
  EXPECT_EQ(reopened_id(), id);
  {
    auto s = WriterStream::Create(dir_, target_);  // a client joining the stream again
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->stream_id(), id);
    ASSERT_TRUE((*s)->Close().ok());
  }
  std::FILE* f = std::fopen((dir_ + "/seq.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"floor\": \"many\"}", f);
  std::fclose(f);
  const std::string fresh = reopened_id();  // also saves it
  EXPECT_NE(fresh, id);
  EXPECT_EQ(fresh.size(), 32u);
  EXPECT_NE(read_file("seq.json").find("\"stream_id\":\"" + fresh + "\""), std::string::npos)
      << read_file("seq.json");
  EXPECT_EQ(reopened_id(), fresh);  // seq.json's id wins over meta.json's
  // An id that this agent did not make is damage too.
  f = std::fopen((dir_ + "/seq.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"floor\": 1, \"stream_id\": \"ZZ\"}", f);
  std::fclose(f);
  const std::string third = reopened_id();
  EXPECT_NE(third, fresh);
  EXPECT_NE(third, id);
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

// `cohort sync` of a kept directory reported its refused records once, then (the records being
// acknowledged and gone) said "uploaded" and exited 0: the count and the last refusal are kept.
TEST_F(WriterStreamTest, RefusedRecordsAreStillCountedAfterReopening) {
  {
    auto s = WriterStream::Create(dir_, target_);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
    ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 2, "y").ok());
    ASSERT_TRUE((*s)->Sync().ok());
    for (int i = 0; i < 2; ++i) {
      const Record* rec = nullptr;
      ASSERT_TRUE(*(*s)->Peek(&rec));
      ASSERT_TRUE((*s)->NoteRefused(Status::PayloadTooLarge("batch " + std::to_string(i) +
                                                            ": over --max-keys-per-batch"))
                      .ok());
      (*s)->Pop();
    }
    EXPECT_EQ((*s)->progress().refused, 2);
    ASSERT_TRUE((*s)->FlushAcks(true).ok());
    ASSERT_TRUE((*s)->Close().ok());
  }
  auto s = WriterStream::OpenExisting(dir_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Record* rec = nullptr;
  EXPECT_FALSE(*(*s)->Peek(&rec));  // nothing left to upload
  UploadProgress p = (*s)->progress();
  EXPECT_EQ(p.refused, 2);
  EXPECT_EQ(p.last_refusal.code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(p.last_refusal.message(), "batch 1: over --max-keys-per-batch");
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

// A writer whose finish record was acknowledged, reopened without a FINISHED marker (a crash,
// or a disk that refused the marker, before the removal): complete, so the directory can go.
// One whose last acknowledged record is not a finish is not.
TEST_F(WriterStreamTest, ReopenedWithItsFinishAcknowledgedAndNoMarkerIsComplete) {
  for (bool finished : {true, false}) {
    SCOPED_TRACE(finished ? "finished" : "not finished");
    {
      auto s = WriterStream::Create(dir_, target_);
      ASSERT_TRUE(s.ok());
      ASSERT_TRUE((*s)->Append(RecordKind::kBatch, 1, 1, "x").ok());
      if (finished) {
        ASSERT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 2, "{}").ok());
      }
      ASSERT_TRUE((*s)->Sync().ok());
      const Record* rec = nullptr;
      while (*(*s)->Peek(&rec)) (*s)->Pop();
      EXPECT_EQ((*s)->progress().complete, finished);
      ASSERT_TRUE((*s)->FlushAcks(true).ok());
      ASSERT_TRUE((*s)->Close().ok());
    }
    EXPECT_FALSE(fs::exists(dir_ + "/" + WriterStream::kFinishedMarker));
    auto again = WriterStream::OpenExisting(dir_);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->progress().appended_records, 0);
    EXPECT_EQ((*again)->progress().complete, finished);
    ASSERT_TRUE((*again)->Remove().ok());
  }
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

// The FINISHED marker is written and synced before anything is deleted; when it cannot be
// written (here: EIO on its write), nothing is deleted and the error says so; a later try works.
TEST_F(WriterStreamTest, AFailedFinishedMarkerDeletesNothingAndALaterRemoveWorks) {
  wal::FaultInjectingFileSystem faults(wal::FileSystem::Default());
  auto s = WriterStream::Create(dir_, target_, &faults);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Append(RecordKind::kWriterFinish, 1, 1, "{}").ok());
  ASSERT_TRUE((*s)->Sync().ok());
  faults.FailWrite(1, EIO, 0, /*sticky=*/true, WriterStream::kFinishedMarker);
  Status st = (*s)->Remove();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot write the FINISHED marker"), std::string::npos)
      << st.ToString();
  EXPECT_TRUE(fs::exists(dir_ + "/meta.json"));
  EXPECT_TRUE(fs::exists(dir_ + "/wal"));
  EXPECT_FALSE(fs::exists(dir_ + "/FINISHED"));
  faults.ClearFaults();
  ASSERT_TRUE((*s)->Remove().ok());
  EXPECT_FALSE(fs::exists(dir_));
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
