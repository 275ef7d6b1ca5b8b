// Helpers for the WAL tests: temporary directories, deterministic payloads, raw file edits and
// draining readers. Test-only; single-threaded.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "wal/file.h"
#include "wal/format.h"
#include "wal/reader.h"

namespace cohort::wal::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/cohort_wal_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return JoinPath(path_, name); }

 private:
  std::string path_;
};

// `size` bytes that differ for each `i` (so a record returned in the wrong place is noticed).
inline std::string Payload(uint64_t i, size_t size) {
  std::string s(size, '\0');
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
  for (size_t k = 0; k < size; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[k] = char(x);
  }
  return s;
}

inline std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteRaw(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline void FlipByte(const std::string& path, uint64_t offset) {
  std::string bytes = ReadRaw(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = char(bytes[offset] ^ 0x5A);
  WriteRaw(path, bytes);
}

inline std::vector<uint64_t> SegmentsIn(const std::string& dir) {
  std::vector<uint64_t> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    uint64_t n = 0;
    if (ParseSegmentFileName(entry.path().filename().string(), &n)) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Compares payload lists by size and first difference (payloads are too long to print).
inline ::testing::AssertionResult SamePayloads(const std::vector<std::string>& got,
                                               const std::vector<std::string>& want) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      return ::testing::AssertionFailure()
             << "payload " << i << " differs (" << got[i].size() << " vs " << want[i].size()
             << " bytes); got " << got.size() << " payloads, want " << want.size();
    }
  }
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "got " << got.size() << " payloads, want " << want.size();
  }
  return ::testing::AssertionSuccess();
}

// Every record the reader has now, in order.
inline std::vector<Record> Drain(Reader* reader) {
  std::vector<Record> out;
  Record r;
  while (true) {
    Result<bool> got = reader->Next(&r);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || !*got) break;
    out.push_back(r);
  }
  return out;
}

inline std::vector<Record> DrainDirectory(const std::string& dir, Position from = {},
                                          std::vector<Damage>* damage = nullptr) {
  Result<std::unique_ptr<Reader>> reader = Reader::OpenDirectory(FileSystem::Default(), dir, from);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  std::vector<Record> out = Drain(reader->get());
  if (damage != nullptr) *damage = (*reader)->TakeDamage();
  return out;
}

// A FileSystem that forwards everything but makes Sync and SyncDir free, for tests that do not
// depend on durability and would otherwise spend their time in fsync.
class NoSyncFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        WriteMode mode) override {
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, base_->NewWritableFile(path, mode));
    return std::unique_ptr<WritableFile>(new File(std::move(f)));
  }
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    return base_->NewSequentialFile(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  Result<uint64_t> FileSize(const std::string& path) override { return base_->FileSize(path); }
  Result<FileStat> Stat(const std::string& path) override { return base_->Stat(path); }
  Result<FileMode> Mode(const std::string& path) override { return base_->Mode(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status Link(const std::string& from, const std::string& to) override {
    return base_->Link(from, to);
  }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  Result<bool> Exists(const std::string& path) override { return base_->Exists(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status SetPermissions(const std::string& path, uint32_t mode) override {
    return base_->SetPermissions(path, mode);
  }
  Status SyncDir(const std::string&) override { return Status::Ok(); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }

 private:
  class File final : public WritableFile {
   public:
    explicit File(std::unique_ptr<WritableFile> base) : base_(std::move(base)) {}
    Status Append(std::string_view data) override { return base_->Append(data); }
    Status WriteAt(uint64_t offset, std::string_view data) override {
      return base_->WriteAt(offset, data);
    }
    Status Sync() override { return Status::Ok(); }
    Status Truncate(uint64_t size) override { return base_->Truncate(size); }
    Status Close() override { return base_->Close(); }
    uint64_t Size() const override { return base_->Size(); }

   private:
    std::unique_ptr<WritableFile> base_;
  };
  FileSystem* base_ = FileSystem::Default();
};

}  // namespace cohort::wal::testing
