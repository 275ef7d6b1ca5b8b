#include "wal/streaming_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cohort::wal {
namespace {

Status NotAtEnd(uint64_t offset, uint64_t end) {
  return Status::FailedPrecondition("a streaming writer writes in order: asked to write at " +
                                    std::to_string(offset) + ", its end is " + std::to_string(end));
}

// Any WritableFile written in order from an offset (the base FileSystem::NewStreamingWriter).
class OffsetWriter final : public WritableFile {
 public:
  OffsetWriter(std::unique_ptr<WritableFile> file, uint64_t offset)
      : file_(std::move(file)), pos_(offset) {}
  Status Append(std::string_view data) override {
    COHORT_RETURN_IF_ERROR(file_->WriteAt(pos_, data));
    pos_ += data.size();
    return Status::Ok();
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (offset != pos_) return NotAtEnd(offset, pos_);
    return Append(data);
  }
  Status Sync() override { return file_->Sync(); }
  Status Truncate(uint64_t size) override {
    COHORT_RETURN_IF_ERROR(file_->Truncate(size));
    pos_ = size;
    return Status::Ok();
  }
  Status Close() override { return file_->Close(); }
  uint64_t Size() const override { return pos_; }

 private:
  std::unique_ptr<WritableFile> file_;
  uint64_t pos_;
};

constexpr size_t kBlockBytes = 4096;     // the alignment O_DIRECT asks of offsets and lengths
constexpr size_t kBufferBytes = 1 << 20;  // gathered before a direct write

// Writes gathered into an aligned buffer go to `direct_fd_` (O_DIRECT) a megabyte at a time;
// what cannot (a tail shorter than a block, a file system that refuses) goes to `plain_fd_`,
// after which every later byte does too. Both descriptors are the same file: one fdatasync
// makes either's writes durable.
class PosixStreamingWriter final : public WritableFile {
 public:
  PosixStreamingWriter(std::string path, int plain_fd, int direct_fd, uint64_t offset)
      : path_(std::move(path)), plain_fd_(plain_fd), direct_fd_(direct_fd), pos_(offset) {
    if (direct_fd_ >= 0) {
      // Mapped, not malloc'ed: page-aligned, and freeing a megabyte from malloc would raise
      // glibc's dynamic mmap threshold, after which a process's later allocations below it stay
      // in its arenas (a server writing parts through it: +48 MiB peak on a 2 GiB upload).
      void* mem = ::mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED) {
        StopDirect();
      } else {
        buf_ = static_cast<char*>(mem);
      }
    }
  }
  ~PosixStreamingWriter() override {
    StopDirect();
    if (plain_fd_ >= 0) ::close(plain_fd_);
    if (buf_ != nullptr) ::munmap(buf_, kBufferBytes);
  }

  Status Append(std::string_view data) override {
    if (plain_fd_ < 0) return Status::FailedPrecondition("write " + path_ + ": file is closed");
    while (!data.empty()) {
      if (direct_fd_ < 0) return PlainWrite(data);
      const size_t n = std::min(kBufferBytes - used_, data.size());
      std::memcpy(buf_ + used_, data.data(), n);
      used_ += n;
      data.remove_prefix(n);
      if (used_ == kBufferBytes) COHORT_RETURN_IF_ERROR(WriteBlocks());
    }
    return Status::Ok();
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (offset != Size()) return NotAtEnd(offset, Size());
    return Append(data);
  }

  Status Sync() override {
    if (plain_fd_ < 0) return Status::FailedPrecondition("sync " + path_ + ": file is closed");
    COHORT_RETURN_IF_ERROR(Drain());
    if (::fdatasync(plain_fd_) != 0) return ErrnoStatus("fdatasync", path_, errno);
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (plain_fd_ < 0) return Status::FailedPrecondition("truncate " + path_ + ": file is closed");
    COHORT_RETURN_IF_ERROR(Drain());
    if (::ftruncate(plain_fd_, off_t(size)) != 0) return ErrnoStatus("ftruncate", path_, errno);
    pos_ = size;
    return Status::Ok();
  }

  Status Close() override {
    if (plain_fd_ < 0) return Status::Ok();
    Status drained = Drain();
    StopDirect();
    const int rc = ::close(plain_fd_);
    plain_fd_ = -1;
    COHORT_RETURN_IF_ERROR(drained);
    if (rc != 0) return ErrnoStatus("close", path_, errno);
    return Status::Ok();
  }

  uint64_t Size() const override { return pos_ + used_; }

 private:
  // Writes the whole blocks gathered, directly; keeps the rest. A file system that refuses the
  // direct write (EINVAL) or writes less gets the rest through the page cache.
  Status WriteBlocks() {
    const size_t whole = used_ / kBlockBytes * kBlockBytes;
    size_t done = 0;
    while (done < whole) {
      const ssize_t n = ::pwrite(direct_fd_, buf_ + done, whole - done, off_t(pos_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EINVAL && errno != EOPNOTSUPP) {
        const int err = errno;
        // What was written is gone from the buffer: Size() and a later write stay right.
        std::memmove(buf_, buf_ + done, used_ - done);
        used_ -= done;
        return ErrnoStatus("write", path_, err);
      }
      if (n <= 0 || size_t(n) % kBlockBytes != 0) {
        // Refused, or a short write that leaves an unaligned position: the page cache from here
        // (what a short write wrote is written again, the same bytes).
        std::string_view rest(buf_ + done, used_ - done);
        used_ = 0;
        StopDirect();
        return PlainWrite(rest);
      }
      done += size_t(n);
      pos_ += uint64_t(n);
    }
    std::memmove(buf_, buf_ + whole, used_ - whole);
    used_ -= whole;
    return Status::Ok();
  }

  // Everything gathered written: the blocks directly, the tail through the page cache (then
  // the position is no longer aligned: every later byte goes that way too).
  Status Drain() {
    if (direct_fd_ < 0 || used_ == 0) return Status::Ok();
    COHORT_RETURN_IF_ERROR(WriteBlocks());
    if (used_ == 0 || direct_fd_ < 0) return Status::Ok();
    std::string_view tail(buf_, used_);
    used_ = 0;
    StopDirect();
    return PlainWrite(tail);
  }

  Status PlainWrite(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::pwrite(plain_fd_, data.data(), data.size(), off_t(pos_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      data.remove_prefix(size_t(n));
      pos_ += uint64_t(n);
    }
    return Status::Ok();
  }

  void StopDirect() {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    direct_fd_ = -1;
  }

  const std::string path_;
  int plain_fd_;
  int direct_fd_;
  uint64_t pos_;      // where the gathered bytes go
  char* buf_ = nullptr;
  size_t used_ = 0;   // gathered, not written
};

}  // namespace

Result<std::unique_ptr<WritableFile>> FileSystem::NewStreamingWriter(const std::string& path,
                                                                     uint64_t offset) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                          NewWritableFile(path, WriteMode::kAppend));
  return std::unique_ptr<WritableFile>(new OffsetWriter(std::move(file), offset));
}

namespace internal {

Result<std::unique_ptr<WritableFile>> OpenPosixStreamingWriter(const std::string& path,
                                                               uint64_t offset) {
  const int plain = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (plain < 0) return ErrnoStatus("open", path, errno);
  int direct = -1;
  if (offset % kBlockBytes == 0) {
    direct = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);  // -1: not allowed here
  }
  return std::unique_ptr<WritableFile>(new PosixStreamingWriter(path, plain, direct, offset));
}

}  // namespace internal
}  // namespace cohort::wal
