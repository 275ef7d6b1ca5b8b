#include "wal/fault_file_system.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>
#include <vector>

namespace cohort::wal {
namespace {

std::string ParentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status CrashedStatus(const std::string& path) {
  return Status::IOError(path + ": file object is from before a simulated crash");
}

}  // namespace

// A file of a FaultInjectingFileSystem: forwards to the base file unless a fault fires.
// Single-threaded, like every WritableFile.
class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectingFileSystem* fs, std::string path,
                    std::unique_ptr<WritableFile> base, uint64_t epoch)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)), epoch_(epoch) {}

  Status Append(std::string_view data) override {
    if (fs_->Crashed(epoch_)) return CrashedStatus(path_);
    int err = 0;
    size_t written_first = 0;
    if (fs_->ShouldFailWrite(path_, &err, &written_first)) {
      written_first = std::min(written_first, data.size());
      if (written_first > 0) COHORT_RETURN_IF_ERROR(base_->Append(data.substr(0, written_first)));
      return ErrnoStatus("write", path_, err);
    }
    return base_->Append(data);
  }

  // Faulted like Append. For the crash model a file written out of order is durable up to its
  // size at the last Sync, as if it had been appended.
  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (fs_->Crashed(epoch_)) return CrashedStatus(path_);
    int err = 0;
    size_t written_first = 0;
    if (fs_->ShouldFailWrite(path_, &err, &written_first)) {
      written_first = std::min(written_first, data.size());
      if (written_first > 0) {
        COHORT_RETURN_IF_ERROR(base_->WriteAt(offset, data.substr(0, written_first)));
      }
      return ErrnoStatus("write", path_, err);
    }
    return base_->WriteAt(offset, data);
  }

  Status Sync() override {
    if (fs_->Crashed(epoch_)) return CrashedStatus(path_);
    int err = 0;
    if (fs_->ShouldFailSync(path_, &err)) return ErrnoStatus("fdatasync", path_, err);
    COHORT_RETURN_IF_ERROR(base_->Sync());
    fs_->OnSynced(path_, base_->Size());
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (fs_->Crashed(epoch_)) return CrashedStatus(path_);
    if (int err = fs_->TruncateError(); err != 0) return ErrnoStatus("ftruncate", path_, err);
    COHORT_RETURN_IF_ERROR(base_->Truncate(size));
    fs_->OnTruncated(path_, size);
    return Status::Ok();
  }

  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

 private:
  FaultInjectingFileSystem* fs_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
  uint64_t epoch_;
};

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem* base) : base_(base) {}

void FaultInjectingFileSystem::FailWrite(int nth, int err, size_t written_first, bool sticky,
                                         std::string path_filter) {
  MutexLock lock(&mu_);
  write_fault_ = Fault{std::max(nth, 1), err, written_first, sticky, false, std::move(path_filter)};
}

void FaultInjectingFileSystem::FailSync(int nth, int err, std::string path_filter) {
  MutexLock lock(&mu_);
  sync_fault_ = Fault{std::max(nth, 1), err, 0, false, false, std::move(path_filter)};
}

void FaultInjectingFileSystem::FailTruncates(int err) {
  MutexLock lock(&mu_);
  truncate_err_ = err;
}

void FaultInjectingFileSystem::FailLinks(int err) {
  MutexLock lock(&mu_);
  link_err_ = err;
}

void FaultInjectingFileSystem::SetBeforeRemoveAll(std::function<void(const std::string&)> hook) {
  MutexLock lock(&mu_);
  before_remove_all_ = std::move(hook);
}

void FaultInjectingFileSystem::ClearFaults() {
  MutexLock lock(&mu_);
  write_fault_ = Fault{};
  sync_fault_ = Fault{};
  truncate_err_ = 0;
  link_err_ = 0;
}

int FaultInjectingFileSystem::writes() const {
  MutexLock lock(&mu_);
  return writes_;
}

int FaultInjectingFileSystem::syncs() const {
  MutexLock lock(&mu_);
  return syncs_;
}

Status FaultInjectingFileSystem::Crash() {
  std::map<std::string, Tracked> tracked;
  std::set<std::string> new_dirs;
  {
    MutexLock lock(&mu_);
    ++epoch_;
    tracked.swap(tracked_);
    new_dirs.swap(new_dirs_);
  }
  Status first;
  // Directories whose entries were never synced go with everything in them (a parent before
  // its children: removing it removes them).
  for (const std::string& dir : new_dirs) {
    Status s = base_->RemoveAll(dir);
    if (s.code() == StatusCode::kNotFound) s = Status::Ok();
    if (first.ok() && !s.ok()) first = s;
  }
  for (const auto& [path, t] : tracked) {
    Status s;
    if (!t.durable_entry) {
      s = base_->Remove(path);
      if (s.code() == StatusCode::kNotFound) s = Status::Ok();
    } else {
      Result<uint64_t> size = base_->FileSize(path);
      if (size.ok() && *size > t.synced) s = base_->Truncate(path, t.synced);
    }
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

bool FaultInjectingFileSystem::ShouldFailWrite(const std::string& path, int* err,
                                               size_t* written_first) {
  MutexLock lock(&mu_);
  ++writes_;
  Fault& f = write_fault_;
  if (f.countdown == 0 && !f.firing) return false;
  if (!f.filter.empty() && path.find(f.filter) == std::string::npos) return false;
  if (f.firing) {
    *err = f.err;
    *written_first = 0;
    return true;
  }
  if (--f.countdown > 0) return false;
  *err = f.err;
  *written_first = f.written_first;
  f.firing = f.sticky;
  return true;
}

bool FaultInjectingFileSystem::ShouldFailSync(const std::string& path, int* err) {
  MutexLock lock(&mu_);
  ++syncs_;
  Fault& f = sync_fault_;
  if (f.countdown == 0) return false;
  if (!f.filter.empty() && path.find(f.filter) == std::string::npos) return false;
  if (--f.countdown > 0) return false;
  *err = f.err;
  return true;
}

int FaultInjectingFileSystem::TruncateError() {
  MutexLock lock(&mu_);
  return truncate_err_;
}

bool FaultInjectingFileSystem::Crashed(uint64_t epoch) const {
  MutexLock lock(&mu_);
  return epoch != epoch_;
}

void FaultInjectingFileSystem::OnSynced(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  auto it = tracked_.find(path);
  if (it != tracked_.end()) it->second.synced = size;
}

void FaultInjectingFileSystem::OnTruncated(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  auto it = tracked_.find(path);
  if (it != tracked_.end()) it->second.synced = std::min(it->second.synced, size);
}

Result<std::unique_ptr<WritableFile>> FaultInjectingFileSystem::NewWritableFile(
    const std::string& path, WriteMode mode) {
  Result<uint64_t> old_size = base_->FileSize(path);
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path, mode));
  MutexLock lock(&mu_);
  auto it = tracked_.find(path);
  if (it == tracked_.end()) {
    // A file that existed before and was not written through us counts as fully durable.
    Tracked t;
    t.durable_entry = old_size.ok();
    t.synced = old_size.ok() ? *old_size : 0;
    it = tracked_.emplace(path, t).first;
  }
  if (mode != WriteMode::kAppend) it->second.synced = 0;
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, path, std::move(file), epoch_));
}

Result<std::unique_ptr<SequentialFile>> FaultInjectingFileSystem::NewSequentialFile(
    const std::string& path) {
  return base_->NewSequentialFile(path);
}

Result<std::vector<std::string>> FaultInjectingFileSystem::ListDir(const std::string& dir) {
  return base_->ListDir(dir);
}

Result<uint64_t> FaultInjectingFileSystem::FileSize(const std::string& path) {
  return base_->FileSize(path);
}

Result<FileStat> FaultInjectingFileSystem::Stat(const std::string& path) {
  return base_->Stat(path);
}

Result<FileMode> FaultInjectingFileSystem::Mode(const std::string& path) {
  return base_->Mode(path);
}

Status FaultInjectingFileSystem::Link(const std::string& from, const std::string& to) {
  int err = 0;
  {
    MutexLock lock(&mu_);
    err = link_err_;
  }
  if (err != 0) return ErrnoStatus("link", to, err);
  return base_->Link(from, to);
}

Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  COHORT_RETURN_IF_ERROR(base_->Rename(from, to));
  MutexLock lock(&mu_);
  new_dirs_.erase(from);  // a directory renamed: its new entry is durable (the simple model)
  auto it = tracked_.find(from);
  if (it != tracked_.end()) {
    Tracked t = it->second;
    t.durable_entry = true;
    tracked_.erase(it);
    tracked_[to] = t;
  } else {
    tracked_.erase(to);
  }
  return Status::Ok();
}

Status FaultInjectingFileSystem::Remove(const std::string& path) {
  COHORT_RETURN_IF_ERROR(base_->Remove(path));
  MutexLock lock(&mu_);
  tracked_.erase(path);
  return Status::Ok();
}

Status FaultInjectingFileSystem::Truncate(const std::string& path, uint64_t size) {
  if (int err = TruncateError(); err != 0) return ErrnoStatus("truncate", path, err);
  COHORT_RETURN_IF_ERROR(base_->Truncate(path, size));
  OnTruncated(path, size);
  return Status::Ok();
}

Status FaultInjectingFileSystem::CreateDir(const std::string& dir) {
  // The directories this call makes (the missing ones of `dir` and its parents): their entries
  // are not durable until their parent is synced.
  std::vector<std::string> made;
  for (std::string d = dir; d.size() > 1;) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    Result<bool> there = base_->Exists(d);
    if (!there.ok() || *there) break;
    made.push_back(d);
    const std::string parent = ParentDir(d);
    if (parent == d || parent.empty()) break;
    d = parent;
  }
  COHORT_RETURN_IF_ERROR(base_->CreateDir(dir));
  MutexLock lock(&mu_);
  for (const std::string& d : made) new_dirs_.insert(d);
  return Status::Ok();
}

Result<bool> FaultInjectingFileSystem::Exists(const std::string& path) {
  return base_->Exists(path);
}

Status FaultInjectingFileSystem::RemoveAll(const std::string& path) {
  std::function<void(const std::string&)> hook;
  {
    MutexLock lock(&mu_);
    hook = before_remove_all_;
  }
  if (hook) hook(path);  // not under mu_: it may wait for other calls to run
  COHORT_RETURN_IF_ERROR(base_->RemoveAll(path));
  MutexLock lock(&mu_);
  const std::string prefix = path + "/";
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    it = it->first == path || it->first.rfind(prefix, 0) == 0 ? tracked_.erase(it) : std::next(it);
  }
  for (auto it = new_dirs_.begin(); it != new_dirs_.end();) {
    it = *it == path || it->rfind(prefix, 0) == 0 ? new_dirs_.erase(it) : std::next(it);
  }
  return Status::Ok();
}

Status FaultInjectingFileSystem::SetPermissions(const std::string& path, uint32_t mode) {
  return base_->SetPermissions(path, mode);
}

Status FaultInjectingFileSystem::SyncDir(const std::string& dir) {
  COHORT_RETURN_IF_ERROR(base_->SyncDir(dir));
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  MutexLock lock(&mu_);
  for (auto& [path, t] : tracked_) {
    if (ParentDir(path) == d) t.durable_entry = true;
  }
  for (auto it = new_dirs_.begin(); it != new_dirs_.end();) {
    it = ParentDir(*it) == d ? new_dirs_.erase(it) : std::next(it);
  }
  return Status::Ok();
}

Result<std::unique_ptr<FileLock>> FaultInjectingFileSystem::LockFile(const std::string& path) {
  return base_->LockFile(path);
}

}  // namespace cohort::wal
