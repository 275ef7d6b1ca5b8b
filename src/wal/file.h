// File-system seam of the write-ahead log and of the agent: the few file operations they need,
// behind small interfaces so that tests can inject faults (see fault_file_system.h) and so that
// neither calls the operating system directly for its files.
//
// Threading: a FileSystem is safe to use from any number of threads. A WritableFile or
// SequentialFile is a single-threaded object (external synchronisation); distinct file objects
// may be used from distinct threads, also when they refer to the same path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::wal {

// A file opened for writing. Every Append writes all of `data` at the end of the file or fails;
// after a failure the file may hold any prefix of `data` (a short write), and Size() says how
// much.
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  virtual Status Append(std::string_view data) = 0;
  // Writes all of `data` at `offset` (pwrite), growing the file as needed; Size() becomes the
  // larger of itself and offset + data.size(). For files filled out of order (the parts of a
  // blob upload); the same failure rules as Append.
  virtual Status WriteAt(uint64_t offset, std::string_view data) = 0;
  // Makes every byte appended so far durable (fdatasync). A failed Sync leaves the durability
  // of unsynced bytes unknown; callers must not retry it as if nothing happened.
  virtual Status Sync() = 0;
  // Cuts the file to `size` bytes; later appends continue at `size`.
  virtual Status Truncate(uint64_t size) = 0;
  // Releases the descriptor. Does not sync. Further calls fail.
  virtual Status Close() = 0;
  // Bytes in the file as this object knows them (including those of a short write).
  virtual uint64_t Size() const = 0;
};

// A file read from the front. Read returns fewer bytes than asked only at the end of the file.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;

  // Reads up to `n` bytes into `scratch` (which must hold `n`) and returns a view of them.
  virtual Result<std::string_view> Read(size_t n, char* scratch) = 0;
  // Moves the read position forward by `n` bytes (past the end is allowed; reads then return
  // nothing).
  virtual Status Skip(uint64_t n) = 0;
};

// An advisory exclusive lock on a file, held until the object is destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
  // Lets go of this copy of the lock without unlocking it: in a forked child, whose descriptor
  // shares the parent's lock (unlocking there would unlock the parent's too).
  virtual void CloseInForkedChild() {}
};

// What tells a file's contents apart without reading them (stat(2)): a file rewritten in place
// gets a new modification time, one replaced by a rename a new inode.
struct FileStat {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // modification time, nanoseconds since the epoch
  bool operator==(const FileStat&) const = default;
};

// The type, permission bits and owner of a path, as lstat(2) tells them (a symbolic link is
// described, not followed).
struct FileMode {
  enum class Type { kRegular, kDirectory, kSymlink, kOther };
  Type type = Type::kOther;
  uint32_t permissions = 0;  // st_mode & 07777
  uint32_t owner = 0;        // the user id
};

enum class WriteMode {
  kCreateExclusive,  // create a new file; kAlreadyExists if the path exists
  kTruncate,         // create or empty the file
  kAppend,           // create if missing, else keep the contents and write at the end
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                WriteMode mode) = 0;
  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;
  // A file written in order from `offset` on (Append; WriteAt only at the current end), for
  // large files that are synced anyway and not read back soon (downloads). Created when missing,
  // never truncated. On this machine's file system the bytes skip the page cache where it allows
  // (O_DIRECT, gathered into aligned blocks; the last bytes, less than a block, go through it
  // at Sync or Close): copying into the page cache was what such writes spent their time on
  // (docs/benchmarks.md, "Artifacts"). This base version is NewWritableFile(kAppend) written
  // at `offset`.
  virtual Result<std::unique_ptr<WritableFile>> NewStreamingWriter(const std::string& path,
                                                                   uint64_t offset);
  // Names (not paths) of the entries of `dir`, without "." and "..", in no particular order.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // kNotFound when the path does not exist.
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  // kNotFound when the path does not exist.
  virtual Result<FileStat> Stat(const std::string& path) = 0;
  // kNotFound when the path does not exist. Links are not followed ("dir/." describes the
  // directory a link `dir` points to).
  virtual Result<FileMode> Mode(const std::string& path) = 0;
  // Atomically replaces `to` with `from` (rename(2)); durable only after SyncDir.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Makes `to` another name of the file `from` (a hard link; kAlreadyExists when `to` exists).
  virtual Status Link(const std::string& from, const std::string& to) = 0;
  // Removes a file or an empty directory. kNotFound when the path does not exist.
  virtual Status Remove(const std::string& path) = 0;
  virtual Status Truncate(const std::string& path, uint64_t size) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual Status CreateDir(const std::string& dir) = 0;
  // True when `path` exists (a file or a directory).
  virtual Result<bool> Exists(const std::string& path) = 0;
  // Removes `path` and, for a directory, everything in it; OK when it does not exist.
  virtual Status RemoveAll(const std::string& path) = 0;
  // Sets the permission bits of `path` (chmod), e.g. 0600 for a file that holds a secret.
  virtual Status SetPermissions(const std::string& path, uint32_t mode) = 0;
  // Makes the entries of `dir` (creations, renames, removals) durable (fsync of the directory).
  virtual Status SyncDir(const std::string& dir) = 0;
  // Takes an exclusive advisory lock on `path` (created if missing). kFailedPrecondition when
  // another holder (this process or another) has it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;

  // The POSIX file system of this machine. Never null; lives for the whole process.
  static FileSystem* Default();
};

// "dir/name".
std::string JoinPath(std::string_view dir, std::string_view name);

// Reads a whole file of at most `max_size` bytes (kCorruption if it is larger).
Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path, uint64_t max_size);

// Replaces `path` with `contents` so that a crash leaves either the old or the new file: writes
// `path`.tmp (with `permissions` set before any byte is written, when given), syncs it, renames
// it over `path` and syncs the directory.
Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view contents,
                           std::optional<uint32_t> permissions = std::nullopt);

// The Status for a failed system call: kUnavailable for a full disk or quota (ENOSPC, EDQUOT:
// retry later), kNotFound for ENOENT, kAlreadyExists for EEXIST, else kIOError. The message
// names the operation, the path and the error ("write /x/1.wal: No space left on device").
Status ErrnoStatus(std::string_view op, std::string_view path, int err);

// A SequentialFile over bytes in memory (a copy is kept), for tests and for parsing.
std::unique_ptr<SequentialFile> NewStringSequentialFile(std::string contents);

}  // namespace cohort::wal
