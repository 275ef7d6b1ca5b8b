#include "blob/blob_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <set>

#include "blob/s3_blob_store.h"
#include "blob/weed_test_server.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/sha256.h"
#include "wal/fault_file_system.h"
#include "wal/file.h"
#include "wal/test_util.h"

namespace cohort::blob {
namespace {

constexpr uint64_t kPart = limits::kBlobPartBytes;

std::string Bytes(size_t n, int seed) {
  std::string s(n, '\0');
  uint32_t x = uint32_t(seed) * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = char(x >> 24);
  }
  return s;
}

std::string Part(const std::string& data, int64_t n) {
  return data.substr(size_t(n) * kPart, PartLength(data.size(), n));
}

// The weed of this test process, started by the first S3 test (each ctest test is a process)
// and stopped at exit.
Result<std::unique_ptr<WeedServerForTest>>* weed_started = nullptr;

WeedServerForTest* Weed(std::string* why_not) {
  if (weed_started == nullptr) {
    weed_started = new Result<std::unique_ptr<WeedServerForTest>>(WeedServerForTest::Start());
  }
  if (!weed_started->ok()) {
    *why_not = weed_started->status().ToString();
    return nullptr;
  }
  return weed_started->value().get();
}

class WeedEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (weed_started != nullptr && weed_started->ok()) weed_started->value().reset();
  }
};
::testing::Environment* const weed_environment =
    ::testing::AddGlobalTestEnvironment(new WeedEnvironment);

// The BlobStore contract, run on every backend: "local" (files) and "s3" (a real SeaweedFS
// weed; skipped, saying why, when weed is not built: scripts/build-weed.sh).
class BlobStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "s3") {
      std::string why_not;
      WeedServerForTest* weed = Weed(&why_not);
      if (weed == nullptr) {
        std::printf("SKIPPED the S3 backend: %s\n", why_not.c_str());
        GTEST_SKIP() << "the S3 backend: " << why_not;
      }
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      std::string prefix = std::string(info->name()) + "/";
      for (char& c : prefix) {
        if (c != '/' && !std::isalnum(static_cast<unsigned char>(c))) c = '-';
      }
      auto opened = OpenS3BlobStore(weed->Config("blob-test", prefix));
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      store_ = std::move(*opened);
      return;
    }
    auto opened = OpenLocalBlobStore(&fault_, dir_.path() + "/blobs");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
  }

  // Uploads every part of `data`, verifies and publishes it.
  void Upload(const std::string& data) {
    const std::string sha = Sha256::Hex(data);
    for (int64_t n = 0; n < PartCount(data.size()); ++n) {
      ASSERT_TRUE(store_->PutPart(sha, data.size(), n, Part(data, n)).ok());
    }
    auto verified = store_->Verify(sha, data.size());
    ASSERT_TRUE(verified.ok()) << verified.status().ToString();
    ASSERT_TRUE((*verified)->Publish().ok());
  }

  wal::testing::TempDir dir_;
  wal::FaultInjectingFileSystem fault_{wal::FileSystem::Default()};
  std::unique_ptr<BlobStore> store_;
};

// Cases that need the local backend (its injected file system).
class LocalBlobStoreTest : public BlobStoreTest {};

INSTANTIATE_TEST_SUITE_P(Backends, BlobStoreTest, ::testing::Values("local", "s3"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Local, LocalBlobStoreTest, ::testing::Values("local"),
                         [](const auto& info) { return info.param; });

TEST(BlobPartsTest, CountsAndLengths) {
  EXPECT_EQ(PartCount(0), 0);
  EXPECT_EQ(PartCount(1), 1);
  EXPECT_EQ(PartCount(kPart), 1);
  EXPECT_EQ(PartCount(kPart + 1), 2);
  EXPECT_EQ(PartLength(kPart + 1, 0), kPart);
  EXPECT_EQ(PartLength(kPart + 1, 1), 1u);
  EXPECT_TRUE(CheckPart(kPart + 1, 1, 1).ok());
  Status wrong = CheckPart(kPart + 1, 0, 5);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("is 8388608 bytes, not 5"), std::string::npos) << wrong.message();
  EXPECT_EQ(CheckPart(10, 1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPart(10, -1, 10).code(), StatusCode::kInvalidArgument);
}

TEST_P(BlobStoreTest, PartsInAnyOrderThenReadBack) {
  const std::string data = Bytes(2 * kPart + 12345, 1);
  const std::string sha = Sha256::Hex(data);
  EXPECT_EQ(store_->Stat(sha).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 2, Part(data, 2)).ok());
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 0, Part(data, 0)).ok());
  EXPECT_EQ(*store_->ListParts(sha, data.size()), (std::vector<int64_t>{0, 2}));
  // Not readable before it is complete, verified and published.
  auto early = store_->Verify(sha, data.size());
  ASSERT_EQ(early.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(early.status().message().find("part 1 of 3 is missing"), std::string::npos);
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 1, Part(data, 1)).ok());
  auto verified = store_->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(store_->Stat(sha).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE((*verified)->Publish().ok());
  ASSERT_TRUE((*verified)->Publish().ok());  // again: already published
  EXPECT_EQ(*store_->Stat(sha), data.size());
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
  EXPECT_EQ(*store_->Read(sha, kPart - 3, 10), data.substr(kPart - 3, 10));
  EXPECT_EQ(*store_->Read(sha, data.size() - 4, 100), data.substr(data.size() - 4));
  EXPECT_TRUE(store_->ListParts(sha, data.size())->empty());  // the upload is gone
}

TEST_P(BlobStoreTest, TheEmptyBlob) {
  const std::string sha = Sha256::Hex("");
  auto verified = store_->Verify(sha, 0);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  EXPECT_EQ(*store_->Stat(sha), 0u);
  EXPECT_EQ(*store_->Read(sha, 0, 10), "");
}

TEST_P(BlobStoreTest, BytesThatAreNotTheAnnouncedBlobAreRefusedAndDropped) {
  const std::string data = Bytes(1000, 2);
  const std::string claimed = Sha256::Hex("something else");
  ASSERT_TRUE(store_->PutPart(claimed, data.size(), 0, data).ok());
  auto verified = store_->Verify(claimed, data.size());
  ASSERT_EQ(verified.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(verified.status().message().find(Sha256::Hex(data)), std::string::npos);
  EXPECT_NE(verified.status().message().find("upload the file again"), std::string::npos);
  EXPECT_TRUE(store_->ListParts(claimed, data.size())->empty());
  EXPECT_EQ(store_->Stat(claimed).status().code(), StatusCode::kNotFound);
}

TEST_P(BlobStoreTest, AnUploadStoredUnderAMadeUpNameIsVerifiedAsItsBlob) {
  const std::string data = Bytes(kPart + 100, 7);
  const std::string sha = Sha256::Hex(data);
  const std::string name(64, 'a');  // the stream's own name: its SHA-256 came at the end
  for (int64_t n = 0; n < PartCount(data.size()); ++n) {
    ASSERT_TRUE(store_->PutPart(name, data.size(), n, Part(data, n)).ok());
  }
  auto wrong = store_->VerifyAs(name, data.size(), std::string(64, 'b'));
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_->ListParts(name, data.size())->empty());  // dropped
  for (int64_t n = 0; n < PartCount(data.size()); ++n) {
    ASSERT_TRUE(store_->PutPart(name, data.size(), n, Part(data, n)).ok());
  }
  auto verified = store_->VerifyAs(name, data.size(), sha);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(store_->Stat(sha).status().code(), StatusCode::kNotFound);  // not before Publish
  ASSERT_TRUE((*verified)->Publish().ok());
  EXPECT_EQ(*store_->Stat(sha), data.size());
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
  EXPECT_EQ(store_->Stat(name).status().code(), StatusCode::kNotFound);
}

TEST_P(BlobStoreTest, BadPartsAndDigestsAreRefused) {
  const std::string sha = Sha256::Hex("x");
  EXPECT_EQ(store_->PutPart(sha, 10, 0, "short").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->PutPart(sha, 10, 1, "0123456789").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->PutPart("../../etc/passwd", 10, 0, "0123456789").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Stat(std::string(64, 'A')).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Read("..", 0, 1).status().code(), StatusCode::kInvalidArgument);
}

// A source handing out `bytes` in chunks of `chunk`, then `end` (empty bytes: the end; an
// error: the body was cut there).
PartSource Chunks(std::string bytes, size_t chunk,
                  Result<std::string_view> end = std::string_view()) {
  auto state = std::make_shared<std::pair<std::string, size_t>>(std::move(bytes), 0);
  return [state, chunk, end]() -> Result<std::string_view> {
    auto& [all, at] = *state;
    if (at >= all.size()) return end;
    std::string_view out = std::string_view(all).substr(at, chunk);
    at += out.size();
    return out;
  };
}

TEST_P(BlobStoreTest, APartStreamedInIsStoredOnlyWhenAllItsBytesCame) {
  const std::string data = Bytes(2 * kPart + 10, 5);
  const std::string sha = Sha256::Hex(data);
  const uint64_t size = data.size();
  ASSERT_TRUE(store_->PutPartFrom(sha, size, 0, kPart, Chunks(Part(data, 0), 1000)).ok());
  // Cut: the body ended early, the connection failed, or more came than the part's length.
  Status short_body =
      store_->PutPartFrom(sha, size, 1, kPart, Chunks(Part(data, 1).substr(9), 4096));
  EXPECT_EQ(short_body.code(), StatusCode::kInvalidArgument) << short_body.ToString();
  EXPECT_NE(short_body.message().find("ended after"), std::string::npos) << short_body.ToString();
  Status cut = store_->PutPartFrom(
      sha, size, 1, kPart,
      Chunks(Part(data, 1).substr(0, 5000), 1000, Status::IOError("the connection closed")));
  EXPECT_EQ(cut.code(), StatusCode::kIOError) << cut.ToString();
  Status too_long = store_->PutPartFrom(sha, size, 2, 10, Chunks(Part(data, 2) + "x", 4));
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument) << too_long.ToString();
  EXPECT_EQ(store_->PutPartFrom(sha, size, 2, 11, Chunks("0123456789x", 4)).code(),
            StatusCode::kInvalidArgument);  // not the part's length (CheckPart)
  EXPECT_EQ(*store_->ListParts(sha, size), (std::vector<int64_t>{0}));
  auto incomplete = store_->Verify(sha, size);
  EXPECT_EQ(incomplete.status().code(), StatusCode::kFailedPrecondition);
  // Sent again whole: the blob is the data.
  ASSERT_TRUE(store_->PutPartFrom(sha, size, 1, kPart, Chunks(Part(data, 1), 1 << 18)).ok());
  ASSERT_TRUE(store_->PutPartFrom(sha, size, 2, 10, Chunks(Part(data, 2), 3)).ok());
  auto verified = store_->Verify(sha, size);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  EXPECT_EQ(*store_->Read(sha, 0, size), data);
}

// A source handing out `bytes` in chunks of `chunk` through one buffer it overwrites at every
// call (as a request body's reader does), then `after` (empty: the end; more bytes; an error).
PartSource ReusedBuffer(std::string bytes, size_t chunk, Result<std::string_view> after) {
  struct State {
    std::string bytes, buffer;
    size_t at = 0;
  };
  auto state = std::make_shared<State>(State{std::move(bytes), std::string(chunk, '#'), 0});
  return [state, chunk, after]() -> Result<std::string_view> {
    // What was handed out before is overwritten in place, at every call (the end's too).
    std::fill(state->buffer.begin(), state->buffer.end(), '#');
    if (state->at >= state->bytes.size()) return after;
    const size_t n = std::min(chunk, state->bytes.size() - state->at);
    state->buffer.resize(std::max(state->buffer.size(), n), '#');
    std::copy_n(state->bytes.data() + state->at, n, state->buffer.data());
    state->at += n;
    return std::string_view(state->buffer.data(), n);
  };
}

TEST_P(BlobStoreTest, APartEndsWhereItsSourceSaysSoAndNoEarlier) {
  const std::string data = Bytes(kPart + 1000, 11);
  const std::string sha = Sha256::Hex(data);
  const uint64_t size = data.size();
  // All of the part's bytes, then more, or then an error: nothing of it is stored.
  Status more = store_->PutPartFrom(sha, size, 0, kPart,
                                    ReusedBuffer(Part(data, 0), 1 << 16, std::string_view("x")));
  EXPECT_EQ(more.code(), StatusCode::kInvalidArgument) << more.ToString();
  EXPECT_NE(more.message().find("more than"), std::string::npos) << more.ToString();
  Status failed = store_->PutPartFrom(
      sha, size, 0, kPart,
      ReusedBuffer(Part(data, 0), 1 << 16, Status::IOError("the connection closed at the end")));
  EXPECT_EQ(failed.code(), StatusCode::kIOError) << failed.ToString();
  EXPECT_TRUE(store_->ListParts(sha, size)->empty());
  // A source whose buffer is overwritten at every call, in pieces that do not divide the part
  // (and a one-byte last piece): the bytes stored are the bytes handed out.
  ASSERT_TRUE(
      store_
          ->PutPartFrom(sha, size, 0, kPart, ReusedBuffer(Part(data, 0), 65537, std::string_view()))
          .ok());
  ASSERT_TRUE(
      store_->PutPartFrom(sha, size, 1, 1000, ReusedBuffer(Part(data, 1), 999, std::string_view()))
          .ok());
  auto verified = store_->Verify(sha, size);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  EXPECT_EQ(*store_->Read(sha, 0, size), data);
  // A part of one byte: then more refused, alone stored.
  const std::string one = Bytes(kPart + 1, 12);
  const std::string one_sha = Sha256::Hex(one);
  EXPECT_EQ(store_
                ->PutPartFrom(one_sha, one.size(), 1, 1,
                              ReusedBuffer(Part(one, 1), 1, std::string_view("y")))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_->ListParts(one_sha, one.size())->empty());
  ASSERT_TRUE(store_
                  ->PutPartFrom(one_sha, one.size(), 1, 1,
                                ReusedBuffer(Part(one, 1), 1, std::string_view()))
                  .ok());
  EXPECT_EQ(*store_->ListParts(one_sha, one.size()), (std::vector<int64_t>{1}));
}

TEST_P(LocalBlobStoreTest, NoPartIsWrittenIntoAnUploadWhileItIsCheckedAndPublished) {
  // A PUT whose body streams slowly keeps its file open: had a completion checked and renamed
  // the upload meanwhile, the rest of the body would land in the published blob.
  const std::string data = Bytes(kPart + 10, 9);
  const std::string sha = Sha256::Hex(data);
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 1, Part(data, 1)).ok());
  Status verify_while_writing;
  bool asked = false;
  std::string first = Part(data, 0);
  ASSERT_TRUE(store_
                  ->PutPartFrom(sha, data.size(), 0, kPart,
                                [&, at = size_t(0)]() mutable -> Result<std::string_view> {
                                  if (at == kPart / 2 && !asked) {
                                    asked = true;
                                    verify_while_writing =
                                        store_->Verify(sha, data.size()).status();
                                  }
                                  std::string_view out =
                                      std::string_view(first).substr(at, 1 << 20);
                                  at += out.size();
                                  return out;
                                })
                  .ok());
  EXPECT_EQ(verify_while_writing.code(), StatusCode::kFailedPrecondition)
      << verify_while_writing.ToString();
  EXPECT_NE(verify_while_writing.message().find("is being written"), std::string::npos)
      << verify_while_writing.ToString();  // not merely "part 0 is missing"
  auto verified = store_->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  // Checked, not yet published: a PUT now is refused, and writes nothing.
  Status late = store_->PutPart(sha, data.size(), 0, Bytes(kPart, 10));
  EXPECT_EQ(late.code(), StatusCode::kUnavailable) << late.ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  verified->reset();
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
}

TEST_P(LocalBlobStoreTest, AFailedPartWriteIsNotListedAndCanBeSentAgain) {
  const std::string data = Bytes(kPart + 10, 3);
  const std::string sha = Sha256::Hex(data);
  fault_.FailWrite(1, ENOSPC, 100, false, "/data");
  Status failed = store_->PutPart(sha, data.size(), 0, Part(data, 0));
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  EXPECT_TRUE(store_->ListParts(sha, data.size())->empty());
  fault_.FailSync(1, EIO, "/data");
  EXPECT_FALSE(store_->PutPart(sha, data.size(), 1, Part(data, 1)).ok());
  EXPECT_TRUE(store_->ListParts(sha, data.size())->empty());
  Upload(data);
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
}

TEST_P(LocalBlobStoreTest, AnUploadRemovedUnderAPartAsksForThePartAgainNotForAnother) {
  // A sweep that drops an upload while one of its parts is written makes the part's file
  // operations fail with ENOENT: that is a part to send again (503), never a 404, which the
  // agent takes for an upload that cannot succeed (it fails the version).
  const std::string data = Bytes(kPart + 10, 4);
  const std::string sha = Sha256::Hex(data);
  fault_.FailWrite(1, ENOENT, 0, false, "/data");
  Status failed = store_->PutPart(sha, data.size(), 0, Part(data, 0));
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  EXPECT_EQ(failed.message().find(dir_.path()), std::string::npos) << failed.ToString();
  Upload(data);
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
}

TEST_P(LocalBlobStoreTest, AnUploadStillReceivingPartsIsNotDroppedHoweverOldItsStart) {
  // An upload begun long ago (an agent resuming after an outage, a very large file over a slow
  // link) is abandoned only when no part came since the grace period began; dropped by its
  // start time, parts already answered 200 were lost and the upload failed.
  const std::string data = Bytes(2 * kPart, 8);
  const std::string sha = Sha256::Hex(data);
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 0, Part(data, 0)).ok());
  const std::string uploads = dir_.path() + "/blobs/uploads";
  auto names = wal::FileSystem::Default()->ListDir(uploads);
  ASSERT_TRUE(names.ok() && names->size() == 1u);
  ASSERT_TRUE(wal::WriteFileAtomically(wal::FileSystem::Default(),
                                       uploads + "/" + names->front() + "/started", "1000")
                  .ok());  // begun in 1970
  ASSERT_TRUE(store_->PutPart(sha, data.size(), 1, Part(data, 1)).ok());  // a part just now
  const int64_t hour_ago = NowMillis() - 3'600'000;
  EXPECT_EQ(*store_->DropUploadsIdleSince(hour_ago), 0);
  EXPECT_EQ(*store_->ListParts(sha, data.size()), (std::vector<int64_t>{0, 1}));
  auto verified = store_->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
}

TEST_P(LocalBlobStoreTest, SharedByServersACompletionPublishesOnlyTheBytesItHashed) {
  // Two servers on one blob directory (a PostgreSQL store): a client sends an upload's parts in
  // order to one (which hashed them as they came) and other bytes for part 1 to the other, then
  // completes on the first. Trusting its own hash, the first published bytes that were not the
  // blob under the blob's name (replacing the good copy other entities held). Shared, a
  // completion hashes every byte as it copies them and publishes its copy.
  const std::string root = dir_.path() + "/shared";
  wal::FileSystem* fs = wal::FileSystem::Default();
  auto a = OpenLocalBlobStore(fs, root, LocalBlobStoreOptions{.shared = true});
  auto b = OpenLocalBlobStore(fs, root, LocalBlobStoreOptions{.shared = true});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string good = Bytes(2 * kPart + 10, 11);
  const std::string sha = Sha256::Hex(good);
  const std::string bad(kPart, 'Z');
  for (int64_t n = 0; n < 3; ++n)
    ASSERT_TRUE((*a)->PutPart(sha, good.size(), n, Part(good, n)).ok());
  ASSERT_TRUE((*b)->PutPart(sha, good.size(), 1, bad).ok());
  auto refused = (*a)->Verify(sha, good.size());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->Stat(sha).status().code(), StatusCode::kNotFound);

  // Bytes written into the upload by another server after the check do not reach the blob.
  for (int64_t n = 0; n < 3; ++n)
    ASSERT_TRUE((*a)->PutPart(sha, good.size(), n, Part(good, n)).ok());
  auto verified = (*a)->Verify(sha, good.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*b)->PutPart(sha, good.size(), 1, bad).ok());
  ASSERT_TRUE((*verified)->Publish().ok());
  verified->reset();
  EXPECT_EQ(*(*a)->Read(sha, 0, good.size()), good);
  EXPECT_EQ(*(*b)->Read(sha, 0, good.size()), good);

  // A verified copy never published (its record failed) goes with the verification.
  const std::string other = Bytes(kPart + 1, 13);
  const std::string other_sha = Sha256::Hex(other);
  for (int64_t n = 0; n < 2; ++n) {
    ASSERT_TRUE((*a)->PutPart(other_sha, other.size(), n, Part(other, n)).ok());
  }
  {
    auto dropped = (*a)->Verify(other_sha, other.size());
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  }
  auto names = fs->ListDir(root + "/uploads");
  ASSERT_TRUE(names.ok() && names->size() == 1u);
  auto left = fs->ListDir(root + "/uploads/" + names->front());
  ASSERT_TRUE(left.ok());
  for (const std::string& name : *left) EXPECT_FALSE(name.starts_with("verified-")) << name;
}

TEST_P(LocalBlobStoreTest, OneUnreadableEntryDoesNotStopTheSweepOfTheOthers) {
  wal::FileSystem* fs = wal::FileSystem::Default();
  const std::string uploads = dir_.path() + "/blobs/uploads";
  ASSERT_TRUE(fs->CreateDir(uploads).ok());
  ASSERT_TRUE(wal::WriteFileAtomically(fs, uploads + "/stray", "not a directory").ok());
  const std::string damaged = uploads + "/" + std::string(64, 'b') + "-5";
  ASSERT_TRUE(fs->CreateDir(damaged).ok());
  ASSERT_TRUE(wal::WriteFileAtomically(fs, damaged + "/started", std::string(100, '9')).ok());
  const std::string abandoned = uploads + "/" + std::string(64, 'c') + "-5";
  ASSERT_TRUE(fs->CreateDir(abandoned).ok());
  ASSERT_TRUE(wal::WriteFileAtomically(fs, abandoned + "/started", "1000").ok());
  auto dropped = store_->DropUploadsIdleSince(int64_t(1) << 62);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 3);
  auto gone = fs->Exists(abandoned);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
}

TEST_P(LocalBlobStoreTest, APublishedBlobSurvivesAPowerLossInANewDirectory) {
  // The first blob of a `sha256/<xx>` directory: the directory's entry in `sha256` must be
  // durable before the completion is answered, as must the store's own directories.
  const std::string root = dir_.path() + "/durable";
  ASSERT_TRUE(wal::FileSystem::Default()->CreateDir(root).ok());  // there before: not tracked
  auto store = OpenLocalBlobStore(&fault_, root);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string data = Bytes(kPart + 3, 12);
  const std::string sha = Sha256::Hex(data);
  for (int64_t n = 0; n < 2; ++n)
    ASSERT_TRUE((*store)->PutPart(sha, data.size(), n, Part(data, n)).ok());
  auto verified = (*store)->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  verified->reset();
  ASSERT_TRUE(fault_.Crash().ok());
  store = OpenLocalBlobStore(&fault_, root);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto read = (*store)->Read(sha, 0, data.size());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, data);
}

TEST_P(LocalBlobStoreTest, AnUploadWhoseStartTimeIsNotWrittenYetIsNotDropped) {
  // The first part of an upload creates `started` empty, writes its time, then opens `data`: a
  // sweep in between read the empty file as time 0 and dropped the upload under the part being
  // written (its data file then failed to open: a 404 that made the agent fail the version). An
  // empty or missing start time goes by the file's (or the directory's) modification time.
  wal::FileSystem* fs = wal::FileSystem::Default();
  const std::string upload = dir_.path() + "/blobs/uploads/" + std::string(64, 'a') + "-100";
  ASSERT_TRUE(fs->CreateDir(dir_.path() + "/blobs/uploads").ok());
  ASSERT_TRUE(fs->CreateDir(upload).ok());
  const int64_t hour_ago = NowMillis() - 3'600'000;
  EXPECT_EQ(*store_->DropUploadsIdleSince(hour_ago), 0) << "no started file";
  for (const std::string& started : {std::string(""), std::string("12x")}) {
    ASSERT_TRUE(wal::WriteFileAtomically(fs, upload + "/started", started).ok());
    EXPECT_EQ(*store_->DropUploadsIdleSince(hour_ago), 0) << "started: '" << started << "'";
  }
  // Abandoned long ago (a crash before the time was written): dropped once the grace is past.
  EXPECT_EQ(*store_->DropUploadsIdleSince(int64_t(1) << 62), 1);
  auto exists = fs->Exists(upload);
  ASSERT_TRUE(exists.ok());
  EXPECT_FALSE(*exists);
}

TEST_P(BlobStoreTest, ListDeleteAndDropOldUploads) {
  const std::string a = Bytes(100, 4), b = Bytes(200, 5);
  Upload(a);
  Upload(b);
  std::set<std::pair<std::string, uint64_t>> listed;
  ASSERT_TRUE(store_
                  ->ListBlobs([&](std::string_view sha, uint64_t size) {
                    listed.emplace(std::string(sha), size);
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(listed, (std::set<std::pair<std::string, uint64_t>>{{Sha256::Hex(a), 100},
                                                                 {Sha256::Hex(b), 200}}));
  ASSERT_TRUE(store_->Delete(Sha256::Hex(a)).ok());
  ASSERT_TRUE(store_->Delete(Sha256::Hex(a)).ok());  // again: nothing to do
  EXPECT_EQ(store_->Stat(Sha256::Hex(a)).status().code(), StatusCode::kNotFound);

  const std::string c = Bytes(kPart + 1, 6);
  ASSERT_TRUE(store_->PutPart(Sha256::Hex(c), c.size(), 0, Part(c, 0)).ok());
  EXPECT_EQ(*store_->DropUploadsIdleSince(0), 0);  // a part came after 0
  EXPECT_EQ(*store_->DropUploadsIdleSince(int64_t(1) << 62), 1);
  EXPECT_TRUE(store_->ListParts(Sha256::Hex(c), c.size())->empty());
}

}  // namespace
}  // namespace cohort::blob

namespace cohort::blob {
namespace {

TEST_P(BlobStoreTest, DeleteUnlessAsksWithTheBlobOutOfReachAndPutsItBack) {
  const std::string data = Bytes(5000, 7);
  const std::string sha = Sha256::Hex(data);
  Upload(data);
  bool asked = false;
  auto kept = store_->DeleteUnless(sha, [&]() -> Result<bool> {
    asked = true;
    EXPECT_EQ(store_->Stat(sha).status().code(), StatusCode::kNotFound);  // out of reach
    return true;
  });
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(asked);
  EXPECT_FALSE(*kept);
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
  // A publication while the question is asked wins: the blob stays.
  auto raced = store_->DeleteUnless(sha, [&]() -> Result<bool> {
    Upload(data);
    return false;
  });
  ASSERT_TRUE(raced.ok());
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
  // An error keeps it too.
  auto failed = store_->DeleteUnless(sha, []() -> Result<bool> { return Status::IOError("x"); });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(*store_->Read(sha, 0, data.size()), data);
  auto gone = store_->DeleteUnless(sha, []() -> Result<bool> { return false; });
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(*gone);
  EXPECT_EQ(store_->Stat(sha).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(*store_->DeleteUnless(sha, []() -> Result<bool> { return false; }));
}

}  // namespace
}  // namespace cohort::blob

#include <thread>

namespace cohort::blob {
namespace {

// A regression test: the first parts of a new upload arriving at once both made "started"
// through one temporary file, and one of them failed.
TEST_P(BlobStoreTest, FirstPartsOfANewUploadArriveAtOnce) {
  for (int round = 0; round < 8; ++round) {
    const std::string data = Bytes(2 * kPart, 100 + round);
    const std::string sha = Sha256::Hex(data);
    Status a, b;
    std::thread t1([&] { a = store_->PutPart(sha, data.size(), 0, Part(data, 0)); });
    std::thread t2([&] { b = store_->PutPart(sha, data.size(), 1, Part(data, 1)); });
    t1.join();
    t2.join();
    ASSERT_TRUE(a.ok()) << a.ToString();
    ASSERT_TRUE(b.ok()) << b.ToString();
    auto verified = store_->Verify(sha, data.size());
    ASSERT_TRUE(verified.ok()) << verified.status().ToString();
    ASSERT_TRUE((*verified)->Publish().ok());
  }
}

// What completing an upload reads back is seen by changing the upload's file behind the store's
// back (same size): bytes it does not read again cannot fail the check.
class BlobStoreHashingTest : public ::testing::Test {
 protected:
  std::unique_ptr<BlobStore> Open() {
    auto opened = OpenLocalBlobStore(wal::FileSystem::Default(), dir_.path() + "/blobs");
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(*opened) : nullptr;
  }
  // Overwrites one byte of the upload's data at `offset`.
  void Scribble(const std::string& sha, uint64_t size, uint64_t offset) {
    const std::string path =
        dir_.path() + "/blobs/uploads/" + sha + "-" + std::to_string(size) + "/data";
    FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(std::fseek(f, long(offset), SEEK_SET), 0);
    const int c = std::fgetc(f);
    ASSERT_EQ(std::fseek(f, long(offset), SEEK_SET), 0);
    std::fputc(c ^ 0xff, f);
    std::fclose(f);
  }
  wal::testing::TempDir dir_;
};

TEST_F(BlobStoreHashingTest, PartsInOrderAreNotReadBackAtCompletion) {
  auto store = Open();
  const std::string data = Bytes(3 * kPart + 5, 40);
  const std::string sha = Sha256::Hex(data);
  for (int64_t n = 0; n < 4; ++n)
    ASSERT_TRUE(store->PutPart(sha, data.size(), n, Part(data, n)).ok());
  Scribble(sha, data.size(), kPart + 7);  // hashed when it arrived: not read again
  auto verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
}

TEST_F(BlobStoreHashingTest, PartsStreamedInOrderAreHashedAsTheyArrive) {
  auto store = Open();
  const std::string data = Bytes(2 * kPart + 5, 45);
  const std::string sha = Sha256::Hex(data);
  for (int64_t n = 0; n < 3; ++n) {
    ASSERT_TRUE(store
                    ->PutPartFrom(sha, data.size(), n, PartLength(data.size(), n),
                                  Chunks(Part(data, n), 256 << 10))
                    .ok());
  }
  Scribble(sha, data.size(), 2 * kPart + 1);  // hashed as it was written: not read again
  auto verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
}

TEST_F(BlobStoreHashingTest, APartCutWhileItWasHashedIsSentAgainAndTheBlobChecksOut) {
  // Part 1's first bytes went into the upload's hash before its body was cut: that hash is no
  // longer the parts', so completion reads the upload back (and finds the bytes right).
  auto store = Open();
  const std::string data = Bytes(2 * kPart, 46);
  const std::string sha = Sha256::Hex(data);
  ASSERT_TRUE(store->PutPart(sha, data.size(), 0, Part(data, 0)).ok());
  EXPECT_FALSE(
      store
          ->PutPartFrom(sha, data.size(), 1, kPart,
                        Chunks(Part(data, 1).substr(0, 3 << 20), 1 << 20, Status::IOError("cut")))
          .ok());
  ASSERT_TRUE(store->PutPart(sha, data.size(), 1, Part(data, 1)).ok());
  auto verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  EXPECT_EQ(*store->Read(sha, 0, data.size()), data);
}

TEST_F(BlobStoreHashingTest, PartsOutOfOrderAreHashedWhenTheGapCloses) {
  auto store = Open();
  const std::string data = Bytes(3 * kPart, 41);
  const std::string sha = Sha256::Hex(data);
  for (int64_t n : {2, 1, 0}) ASSERT_TRUE(store->PutPart(sha, data.size(), n, Part(data, n)).ok());
  auto verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
}

TEST_F(BlobStoreHashingTest, APartReplacedWithOtherBytesAfterItWasHashedIsRefused) {
  auto store = Open();
  const std::string data = Bytes(3 * kPart, 42);
  const std::string sha = Sha256::Hex(data);
  for (int64_t n = 0; n < 3; ++n)
    ASSERT_TRUE(store->PutPart(sha, data.size(), n, Part(data, n)).ok());
  ASSERT_TRUE(store->PutPart(sha, data.size(), 1, Bytes(kPart, 7)).ok());
  auto verified = store->Verify(sha, data.size());
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.status().code(), StatusCode::kInvalidArgument);
  // Sent again right, after the refusal dropped the parts: stored.
  for (int64_t n = 0; n < 3; ++n)
    ASSERT_TRUE(store->PutPart(sha, data.size(), n, Part(data, n)).ok());
  ASSERT_TRUE(store->PutPart(sha, data.size(), 1, Part(data, 1)).ok());  // again, same bytes
  verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
}

TEST_F(BlobStoreHashingTest, AfterARestartCompletionReadsTheWholeUpload) {
  const std::string data = Bytes(2 * kPart, 43);
  const std::string sha = Sha256::Hex(data);
  {
    auto store = Open();
    for (int64_t n = 0; n < 2; ++n)
      ASSERT_TRUE(store->PutPart(sha, data.size(), n, Part(data, n)).ok());
  }
  auto store = Open();  // a new server: no hash in memory, the whole file is read
  auto verified = store->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  // And a byte changed on disk before completion is caught then.
  const std::string other = Bytes(2 * kPart, 44);
  const std::string other_sha = Sha256::Hex(other);
  for (int64_t n = 0; n < 2; ++n)
    ASSERT_TRUE(store->PutPart(other_sha, other.size(), n, Part(other, n)).ok());
  auto restarted = Open();
  Scribble(other_sha, other.size(), 3);
  auto refused = restarted->Verify(other_sha, other.size());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::blob
