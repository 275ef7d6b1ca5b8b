#include "wal/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "wal/streaming_writer.h"

namespace cohort::wal {
namespace {

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message, which may or may not be `buf`.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return text;
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status::FailedPrecondition("write " + path_ + ": file is closed");
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::pwrite(fd_, p, left, off_t(size_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      p += n;
      left -= size_t(n);
      size_ += uint64_t(n);
    }
    return Status::Ok();
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (fd_ < 0) return Status::FailedPrecondition("write " + path_ + ": file is closed");
    const char* p = data.data();
    size_t left = data.size();
    uint64_t at = offset;
    while (left > 0) {
      ssize_t n = ::pwrite(fd_, p, left, off_t(at));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      p += n;
      left -= size_t(n);
      at += uint64_t(n);
      size_ = std::max(size_, at);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::FailedPrecondition("sync " + path_ + ": file is closed");
    if (::fdatasync(fd_) != 0) return ErrnoStatus("fdatasync", path_, errno);
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (fd_ < 0) return Status::FailedPrecondition("truncate " + path_ + ": file is closed");
    if (::ftruncate(fd_, off_t(size)) != 0) return ErrnoStatus("ftruncate", path_, errno);
    size_ = size;
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return ErrnoStatus("close", path_, errno);
    return Status::Ok();
  }

  uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  Result<std::string_view> Read(size_t n, char* scratch) override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, scratch + got, n - got);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path_, errno);
      }
      if (r == 0) break;
      got += size_t(r);
    }
    return std::string_view(scratch, got);
  }

  Status Skip(uint64_t n) override {
    if (::lseek(fd_, off_t(n), SEEK_CUR) < 0) return ErrnoStatus("lseek", path_, errno);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  void CloseInForkedChild() override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        WriteMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    if (mode == WriteMode::kCreateExclusive) flags |= O_EXCL;
    if (mode == WriteMode::kTruncate) flags |= O_TRUNC;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    uint64_t size = 0;
    if (mode == WriteMode::kAppend) {
      struct stat st;
      if (::fstat(fd, &st) != 0) {
        Status s = ErrnoStatus("fstat", path, errno);
        ::close(fd);
        return s;
      }
      size = uint64_t(st.st_size);
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, size));
  }

  Result<std::unique_ptr<WritableFile>> NewStreamingWriter(const std::string& path,
                                                           uint64_t offset) override {
    return internal::OpenPosixStreamingWriter(path, offset);
  }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoStatus("opendir", dir, errno);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name(e->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoStatus("readdir", dir, err);
    return names;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    return uint64_t(st.st_size);
  }

  Result<FileStat> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    return FileStat{.device = uint64_t(st.st_dev),
                    .inode = uint64_t(st.st_ino),
                    .size = uint64_t(st.st_size),
                    .mtime_ns = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  }

  Result<FileMode> Mode(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("lstat", path, errno);
    FileMode m{.permissions = uint32_t(st.st_mode & 07777), .owner = uint32_t(st.st_uid)};
    if (S_ISREG(st.st_mode)) m.type = FileMode::Type::kRegular;
    if (S_ISDIR(st.st_mode)) m.type = FileMode::Type::kDirectory;
    if (S_ISLNK(st.st_mode)) m.type = FileMode::Type::kSymlink;
    return m;
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("rename", from, errno);
    return Status::Ok();
  }

  Status Link(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) return ErrnoStatus("link", to, errno);
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::remove(path.c_str()) != 0) return ErrnoStatus("remove", path, errno);
    return Status::Ok();
  }

  Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), off_t(size)) != 0) return ErrnoStatus("truncate", path, errno);
    return Status::Ok();
  }

  Status CreateDir(const std::string& dir) override {
    if (dir.empty()) return Status::InvalidArgument("mkdir: empty path");
    // Create each missing component in turn (mkdir -p).
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir.find('/', pos + 1);
      std::string prefix = dir.substr(0, pos);
      if (prefix.empty()) continue;
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus("mkdir", prefix, errno);
      }
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus("stat", dir, errno);
    if (!S_ISDIR(st.st_mode)) return Status::FailedPrecondition(dir + " is not a directory");
    return Status::Ok();
  }

  Result<bool> Exists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return ErrnoStatus("stat", path, errno);
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoStatus("remove", path, ec.value());
    return Status::Ok();
  }

  Status SetPermissions(const std::string& path, uint32_t mode) override {
    if (::chmod(path.c_str(), mode_t(mode)) != 0) return ErrnoStatus("chmod", path, errno);
    return Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = ErrnoStatus("fsync", dir, errno);
    ::close(fd);
    return s;
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Status::FailedPrecondition(path + " is locked by another user of the directory");
      }
      return ErrnoStatus("flock", path, err);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(fd));
  }
};

class StringSequentialFile final : public SequentialFile {
 public:
  explicit StringSequentialFile(std::string contents) : contents_(std::move(contents)) {}

  Result<std::string_view> Read(size_t n, char* scratch) override {
    uint64_t left = pos_ < contents_.size() ? contents_.size() - pos_ : 0;
    size_t got = size_t(std::min<uint64_t>(n, left));
    if (got > 0) std::memcpy(scratch, contents_.data() + pos_, got);
    pos_ += got;
    return std::string_view(scratch, got);
  }

  Status Skip(uint64_t n) override {
    pos_ += n;
    return Status::Ok();
  }

 private:
  std::string contents_;
  uint64_t pos_ = 0;
};

}  // namespace

FileSystem* FileSystem::Default() {
  static PosixFileSystem* fs = new PosixFileSystem();
  return fs;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path, uint64_t max_size) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs->NewSequentialFile(path));
  std::string out;
  std::string scratch(4096, '\0');
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::string_view chunk, file->Read(scratch.size(), scratch.data()));
    if (chunk.empty()) break;
    if (out.size() + chunk.size() > max_size) {
      return Status::Corruption(path + " is larger than " + std::to_string(max_size) + " bytes");
    }
    out.append(chunk);
  }
  return out;
}

Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view contents,
                           std::optional<uint32_t> permissions) {
  std::string tmp = path + ".tmp";
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                          fs->NewWritableFile(tmp, WriteMode::kTruncate));
  Status s = permissions ? fs->SetPermissions(tmp, *permissions) : Status::Ok();
  if (s.ok()) s = file->Append(contents);
  if (s.ok()) s = file->Sync();
  Status c = file->Close();
  if (s.ok()) s = c;
  if (s.ok()) s = fs->Rename(tmp, path);
  if (!s.ok()) {
    (void)fs->Remove(tmp);  // best effort: a stale .tmp is harmless and removed on the next open
    return s;
  }
  size_t slash = path.rfind('/');
  return fs->SyncDir(slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1)));
}

Status ErrnoStatus(std::string_view op, std::string_view path, int err) {
  std::string msg(op);
  msg += ' ';
  msg += path;
  msg += ": ";
  msg += ErrnoText(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return Status::Unavailable(std::move(msg));
    case ENOENT:
      return Status::NotFound(std::move(msg));
    case EEXIST:
      return Status::AlreadyExists(std::move(msg));
    default:
      return Status::IOError(std::move(msg));
  }
}

std::unique_ptr<SequentialFile> NewStringSequentialFile(std::string contents) {
  return std::make_unique<StringSequentialFile>(std::move(contents));
}

}  // namespace cohort::wal
