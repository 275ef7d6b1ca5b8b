// FaultInjectingFileSystem: a FileSystem for tests that wraps another one (normally the POSIX
// one over a temporary directory) and makes chosen operations fail the way disks fail:
//   - the Nth write fails with an errno (ENOSPC, EIO, ...), optionally after writing only a prefix
//     of its bytes (a short write), once or for every later write (a full disk);
//   - the Nth sync fails with an errno;
//   - truncates fail;
//   - Crash() simulates a power loss: every file written through this object loses the bytes
//     appended after its last successful Sync, files created since their directory's last
//     SyncDir disappear, directories it made since their parent's last SyncDir disappear with
//     everything in them, and every file object opened before the crash stops working.
//
// The crash model is deliberately simple: renames and removals take effect at once and are
// durable, and a rename makes its target's directory entry durable. Reads are never faulted.
//
// Threading: thread-safe; all bookkeeping is under mu_ (see COHORT_GUARDED_BY). Counters count
// calls made through this object only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/mutex.h"
#include "wal/file.h"

namespace cohort::wal {

class FaultInjectingFileSystem final : public FileSystem {
 public:
  // `base` must outlive this object.
  explicit FaultInjectingFileSystem(FileSystem* base);

  // The `nth` write from now (1 = the next one) whose path contains `path_filter` fails with
  // errno `err`, after writing the first `written_first` bytes of its data. With `sticky`, that
  // write and every later matching write fail (later ones write nothing).
  void FailWrite(int nth, int err, size_t written_first = 0, bool sticky = false,
                 std::string path_filter = "");
  // The `nth` sync from now whose path contains `path_filter` fails with errno `err`.
  void FailSync(int nth, int err, std::string path_filter = "");
  // Every truncate (of a file object or by path) fails with errno `err`; 0 turns this off.
  void FailTruncates(int err);
  // Every hard link fails with errno `err` (a file system without hard links: EPERM); 0 turns
  // this off.
  void FailLinks(int err);
  // Called with the path at the start of every RemoveAll (nullptr: none): a test holds a
  // removal midway to look at what runs meanwhile.
  void SetBeforeRemoveAll(std::function<void(const std::string&)> hook);
  // Removes every injected fault.
  void ClearFaults();

  // Simulates a power loss (see the file comment). Returns the first error of the base file
  // system while rolling files back.
  Status Crash();

  int writes() const;  // Append calls seen
  int syncs() const;   // Sync calls seen (files only)

  // FileSystem:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        WriteMode mode) override;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<FileStat> Stat(const std::string& path) override;
  Result<FileMode> Mode(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Link(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status Truncate(const std::string& path, uint64_t size) override;
  Status CreateDir(const std::string& dir) override;
  Result<bool> Exists(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status SetPermissions(const std::string& path, uint32_t mode) override;
  Status SyncDir(const std::string& dir) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;

 private:
  friend class FaultWritableFile;

  struct Fault {
    int countdown = 0;  // 0: none armed; fires when a matching call brings it to 0
    int err = 0;
    size_t written_first = 0;
    bool sticky = false;
    bool firing = false;  // a sticky fault that has fired
    std::string filter;
  };
  // What a crash does to one path.
  struct Tracked {
    uint64_t synced = 0;         // bytes that survive a crash
    bool durable_entry = false;  // false: created since the directory was last synced
  };

  // Decides whether a write/sync of `path` fails now; fills *err / *written_first.
  bool ShouldFailWrite(const std::string& path, int* err, size_t* written_first)
      COHORT_EXCLUDES(mu_);
  bool ShouldFailSync(const std::string& path, int* err) COHORT_EXCLUDES(mu_);
  int TruncateError() COHORT_EXCLUDES(mu_);
  bool Crashed(uint64_t epoch) const COHORT_EXCLUDES(mu_);
  void OnSynced(const std::string& path, uint64_t size) COHORT_EXCLUDES(mu_);
  void OnTruncated(const std::string& path, uint64_t size) COHORT_EXCLUDES(mu_);

  FileSystem* base_;
  mutable Mutex mu_;
  Fault write_fault_ COHORT_GUARDED_BY(mu_);
  Fault sync_fault_ COHORT_GUARDED_BY(mu_);
  int truncate_err_ COHORT_GUARDED_BY(mu_) = 0;
  int link_err_ COHORT_GUARDED_BY(mu_) = 0;
  std::function<void(const std::string&)> before_remove_all_ COHORT_GUARDED_BY(mu_);
  // Directories made through this object whose parent was not synced since.
  std::set<std::string> new_dirs_ COHORT_GUARDED_BY(mu_);
  int writes_ COHORT_GUARDED_BY(mu_) = 0;
  int syncs_ COHORT_GUARDED_BY(mu_) = 0;
  // Incremented by Crash(); file objects of older epochs are dead.
  uint64_t epoch_ COHORT_GUARDED_BY(mu_) = 0;
  std::map<std::string, Tracked> tracked_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::wal
