#include "wal/log.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "wal/ack_file.h"
#include "wal/segment_reader.h"

namespace cohort::wal {
namespace {

constexpr std::string_view kCorruptSuffix = ".corrupt";

// Checks the header of segment file `path`.
Status ReadSegmentHeader(FileSystem* fs, const std::string& path, uint64_t segment) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs->NewSequentialFile(path));
  char buf[kSegmentHeaderSize];
  COHORT_ASSIGN_OR_RETURN(std::string_view header, file->Read(sizeof(buf), buf));
  return CheckSegmentHeader(header, segment);
}

std::string ParentDir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : dir.substr(0, slash);
}

}  // namespace

// The Log as readers see it: sealed segments at their final size, the active one up to its
// durable end. Thread-safe (takes Log::mu_).
class Log::Source final : public SegmentSource {
 public:
  explicit Source(Log* log) : log_(log) {}

  std::optional<Extent> GetExtent(uint64_t segment) override {
    MutexLock lock(&log_->mu_);
    auto it = log_->sealed_.find(segment);
    if (it != log_->sealed_.end()) return Extent{it->second, true};
    if (segment != 0 && segment == log_->active_) {
      return Extent{log_->durable_end_.offset, false};
    }
    return std::nullopt;
  }

  std::optional<uint64_t> NextSegment(uint64_t after) override {
    MutexLock lock(&log_->mu_);
    auto it = log_->sealed_.upper_bound(after);
    if (it != log_->sealed_.end()) return it->first;
    if (log_->active_ > after) return log_->active_;
    return std::nullopt;
  }

 private:
  Log* log_;
};

std::string RecoveryReport::ToString() const {
  std::string s = "WAL recovery: " + std::to_string(segments) + " segment(s)";
  if (clean()) s += ", clean";
  for (const std::string& note : notes) s += "; " + note;
  return s;
}

Log::Log(FileSystem* fs, std::string dir, LogOptions options)
    : fs_(fs), dir_(std::move(dir)), options_(options), source_(std::make_unique<Source>(this)) {}

Log::~Log() = default;

Result<std::unique_ptr<Log>> Log::Open(const std::string& dir, LogOptions options) {
  FileSystem* fs = options.fs != nullptr ? options.fs : FileSystem::Default();
  if (options.segment_size < kSegmentHeaderSize + kFragmentHeaderSize) {
    return Status::InvalidArgument("WAL segment size " + std::to_string(options.segment_size) +
                                   " is too small");
  }
  Result<std::vector<std::string>> existing = fs->ListDir(dir);
  if (existing.status().code() == StatusCode::kNotFound && options.create_if_missing) {
    COHORT_RETURN_IF_ERROR(fs->CreateDir(dir));
    // Make the new directory's own entry durable, or a crash could lose the whole log.
    COHORT_RETURN_IF_ERROR(fs->SyncDir(ParentDir(dir)));
  } else if (!existing.ok()) {
    return existing.status();
  }
  std::unique_ptr<Log> log(new Log(fs, dir, options));
  COHORT_ASSIGN_OR_RETURN(log->lock_, fs->LockFile(JoinPath(dir, kLockFileName)));
  {
    MutexLock lock(&log->append_mu_);
    COHORT_RETURN_IF_ERROR(log->Recover());
  }
  return log;
}

std::string Log::SegmentPath(uint64_t segment) const {
  return JoinPath(dir_, SegmentFileName(segment));
}

Status Log::DistrustAckFile(Status why) {
  recovery_.notes.push_back("ack file set aside as " + std::string(kAckFileName) +
                            std::string(kCorruptSuffix) + " (" + why.ToString() +
                            "); every record counts as unacknowledged and will be sent again");
  recovery_.ack_error = std::move(why);
  std::string path = JoinPath(dir_, kAckFileName);
  Status s = fs_->Rename(path, path + std::string(kCorruptSuffix));
  if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  COHORT_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  MutexLock lock(&mu_);
  ack_ = Position{};
  return Status::Ok();
}

Status Log::Recover() {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dir_));
  std::vector<uint64_t> segments;
  const std::string ack_tmp = std::string(kAckFileName) + ".tmp";
  for (const std::string& name : names) {
    uint64_t segment = 0;
    if (ParseSegmentFileName(name, &segment)) {
      segments.push_back(segment);
    } else if (name == ack_tmp) {
      // A crash while the ack file was being replaced; the old ACK is still in place.
      Status s = fs_->Remove(JoinPath(dir_, ack_tmp));
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    }
  }
  std::sort(segments.begin(), segments.end());

  Result<std::optional<Position>> ack = ReadAckFile(fs_, dir_);
  if (!ack.ok()) {
    if (ack.status().code() != StatusCode::kCorruption) return ack.status();
    COHORT_RETURN_IF_ERROR(DistrustAckFile(ack.status()));
  } else if (ack->has_value()) {
    MutexLock lock(&mu_);
    ack_ = **ack;
  }

  // Every segment but the last was synced whole when the log rolled past it.
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const uint64_t segment = segments[i];
    const std::string path = SegmentPath(segment);
    COHORT_ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
    Status header = ReadSegmentHeader(fs_, path, segment);
    if (header.code() == StatusCode::kFailedPrecondition) return header;
    if (!header.ok()) {
      recovery_.damage.push_back(
          Damage{Position{segment, 0}, size, "unreadable segment header: " + header.message()});
      recovery_.notes.push_back("segment " + std::to_string(segment) +
                                " has an unreadable header (" + header.message() +
                                "); its records cannot be read");
    }
    MutexLock lock(&mu_);
    sealed_[segment] = size;
  }
  if (segments.empty()) {
    const uint64_t first = std::max(kFirstSegment, acknowledged().segment + 1);
    COHORT_ASSIGN_OR_RETURN(writer_, Writer::Create(fs_, dir_, first, options_.segment_size));
  } else {
    COHORT_RETURN_IF_ERROR(RecoverLastSegment(segments.back()));
  }

  // The ack file is only ever written for durable positions, so one beyond the end of the log
  // cannot be trusted; believing it could let new records count as acknowledged.
  if (const Position ack = acknowledged(); ack > writer_->end()) {
    COHORT_RETURN_IF_ERROR(DistrustAckFile(
        Status::Corruption("acknowledged position " + ack.ToString() +
                           " is beyond the end of the log " + writer_->end().ToString())));
  }

  std::vector<uint64_t> doomed;
  {
    MutexLock lock(&mu_);
    active_ = writer_->segment();
    end_ = writer_->end();
    durable_end_ = writer_->synced_end();
    doomed = TakeAcknowledgedSegmentsLocked();
  }
  for (uint64_t segment : doomed) {
    Status s = fs_->Remove(SegmentPath(segment));
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  if (!doomed.empty()) {
    recovery_.deleted_segments = doomed.size();
    recovery_.notes.push_back("deleted " + std::to_string(doomed.size()) +
                              " acknowledged segment(s) left by an interrupted clean-up");
    COHORT_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  }
  MutexLock lock(&mu_);
  recovery_.segments = sealed_.size() + 1;
  return Status::Ok();
}

Status Log::RecoverLastSegment(uint64_t last) {
  const std::string path = SegmentPath(last);
  COHORT_ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
  if (size < kSegmentHeaderSize) {
    // A crash while the segment was being created: it cannot hold a record.
    if (size > 0) {
      recovery_.torn_tail = Position{last, 0};
      recovery_.torn_tail_bytes = size;
    }
    recovery_.notes.push_back("removed segment " + std::to_string(last) + " of " +
                              std::to_string(size) +
                              " bytes, shorter than its header (a crash while creating it)");
    COHORT_RETURN_IF_ERROR(fs_->Remove(path));
    COHORT_ASSIGN_OR_RETURN(writer_, Writer::Create(fs_, dir_, last, options_.segment_size));
    return Status::Ok();
  }
  Status header = ReadSegmentHeader(fs_, path, last);
  if (header.code() == StatusCode::kFailedPrecondition) return header;
  if (!header.ok()) {
    recovery_.damage.push_back(
        Damage{Position{last, 0}, size, "unreadable segment header: " + header.message()});
    recovery_.notes.push_back("segment " + std::to_string(last) + " has an unreadable header (" +
                              header.message() + "); set aside as " + SegmentFileName(last) +
                              std::string(kCorruptSuffix));
    COHORT_RETURN_IF_ERROR(fs_->Rename(path, path + std::string(kCorruptSuffix)));
    COHORT_ASSIGN_OR_RETURN(writer_, Writer::Create(fs_, dir_, last + 1, options_.segment_size));
    return Status::Ok();
  }

  // Find the end of the last whole record.
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs_->NewSequentialFile(path));
  SegmentReader scan(last, std::move(file), 0);
  Record record;
  std::vector<Damage> damage;
  uint64_t valid_end = kSegmentHeaderSize;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool got, scan.Next(size, /*sealed=*/true, &record, &damage));
    if (!got) break;
    valid_end = record.next.offset;
  }
  bool damaged = false;
  for (Damage& d : damage) {
    if (d.position.offset >= valid_end) continue;  // part of the torn tail
    damaged = true;
    recovery_.notes.push_back("damage in the middle of the log: " + d.ToString());
    recovery_.damage.push_back(std::move(d));
  }
  if (size > valid_end) {
    recovery_.torn_tail = Position{last, valid_end};
    recovery_.torn_tail_bytes = size - valid_end;
    recovery_.notes.push_back("cut a torn tail of " + std::to_string(size - valid_end) +
                              " byte(s) at " + recovery_.torn_tail.ToString());
  }
  // Resume truncates the tail and syncs what the previous process left.
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Writer> resumed,
                          Writer::Resume(fs_, dir_, last, valid_end, options_.segment_size));
  if (!damaged) {
    writer_ = std::move(resumed);
    return Status::Ok();
  }
  // Never append behind damage: a reader resynchronising past it would skip the new records of
  // the damaged block. Seal the segment and go on in a new one.
  COHORT_RETURN_IF_ERROR(resumed->Close());
  {
    MutexLock lock(&mu_);
    sealed_[last] = valid_end;
  }
  recovery_.notes.push_back("segment " + std::to_string(last) +
                            " is damaged; appends go to segment " + std::to_string(last + 1));
  COHORT_ASSIGN_OR_RETURN(writer_, Writer::Create(fs_, dir_, last + 1, options_.segment_size));
  return Status::Ok();
}

std::vector<uint64_t> Log::TakeAcknowledgedSegmentsLocked() {
  std::vector<uint64_t> doomed;
  for (auto it = sealed_.begin(); it != sealed_.end();) {
    bool below =
        it->first < ack_.segment || (it->first == ack_.segment && ack_.offset >= it->second);
    if (!below) break;
    doomed.push_back(it->first);
    it = sealed_.erase(it);
  }
  return doomed;
}

void Log::Publish(uint64_t old_segment, uint64_t old_end) {
  MutexLock lock(&mu_);
  if (writer_->segment() != old_segment) {
    sealed_[old_segment] = old_end;
    active_ = writer_->segment();
  }
  end_ = writer_->end();
  durable_end_ = writer_->synced_end();
}

Result<Position> Log::Append(std::string_view payload) {
  MutexLock lock(&append_mu_);
  if (writer_ == nullptr) return Status::FailedPrecondition("WAL " + dir_ + " is closed");
  const uint64_t segment = writer_->segment();
  const uint64_t old_end = writer_->end().offset;
  Result<Position> end = writer_->Append(payload);
  Publish(segment, old_end);
  return end;
}

Status Log::Sync() {
  MutexLock lock(&append_mu_);
  if (writer_ == nullptr) return Status::FailedPrecondition("WAL " + dir_ + " is closed");
  Status s = writer_->Sync();
  Publish(writer_->segment(), writer_->end().offset);
  return s;
}

bool Log::broken() const {
  MutexLock lock(&append_mu_);
  return writer_ != nullptr && !writer_->broken().ok();
}

Status Log::Close() {
  MutexLock lock(&append_mu_);
  if (writer_ == nullptr) return Status::Ok();
  const bool was_broken = !writer_->broken().ok();
  Status s = writer_->Close();
  {
    MutexLock state_lock(&mu_);
    // Readers may drain what is durable; nothing more will come.
    sealed_[active_] = s.ok() ? end_.offset : durable_end_.offset;
    if (s.ok()) durable_end_ = end_;
    if (was_broken || !s.ok()) {
      // A failed sync may have lost bytes the page cache still shows: the segment is cut back
      // to what was durable, so that a reopen recovers only that (a later sync would succeed
      // on the rest and pass it off as kept). What was cut was never acknowledged.
      const uint64_t keep =
          durable_end_.segment == active_ ? durable_end_.offset : kSegmentHeaderSize;
      if (Status t = fs_->Truncate(SegmentPath(active_), keep); !t.ok()) {
        s = Status::IOError("WAL " + dir_ + ": " + s.message() +
                            "; cutting it back to what is durable failed too: " + t.message());
      }
    }
    active_ = 0;
  }
  writer_.reset();
  lock_.reset();
  return s;
}

Status Log::MarkAcknowledged(Position acknowledged) {
  MutexLock ack_lock(&ack_mu_);
  {
    MutexLock lock(&mu_);
    if (acknowledged <= ack_) return Status::Ok();
    if (acknowledged > durable_end_) {
      return Status::InvalidArgument("cannot acknowledge " + acknowledged.ToString() +
                                     ": the log is durable only up to " + durable_end_.ToString());
    }
  }
  COHORT_RETURN_IF_ERROR(WriteAckFile(fs_, dir_, acknowledged));
  std::vector<uint64_t> doomed;
  {
    MutexLock lock(&mu_);
    ack_ = acknowledged;
    doomed = TakeAcknowledgedSegmentsLocked();
  }
  Status first;
  for (uint64_t segment : doomed) {
    Status s = fs_->Remove(SegmentPath(segment));
    if (!s.ok() && s.code() != StatusCode::kNotFound && first.ok()) first = s;
  }
  return first;
}

std::unique_ptr<Reader> Log::NewReader(Position from) {
  return std::make_unique<Reader>(fs_, dir_, source_.get(), from);
}

std::unique_ptr<Reader> Log::ReadUnacknowledged() { return NewReader(acknowledged()); }

Position Log::end() const {
  MutexLock lock(&mu_);
  return end_;
}

Position Log::durable_end() const {
  MutexLock lock(&mu_);
  return durable_end_;
}

Position Log::acknowledged() const {
  MutexLock lock(&mu_);
  return ack_;
}

}  // namespace cohort::wal
