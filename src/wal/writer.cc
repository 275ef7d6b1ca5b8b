#include "wal/writer.h"

#include <utility>

namespace cohort::wal {
namespace {

// The encoding buffer is kept between appends up to this size.
constexpr size_t kKeepScratch = 4 << 20;

}  // namespace

Writer::Writer(FileSystem* fs, std::string dir, uint64_t segment_size)
    : fs_(fs), dir_(std::move(dir)), segment_size_(segment_size) {}

Writer::~Writer() {
  if (file_ != nullptr) (void)file_->Close();  // no sync: the owner decides durability
}

Result<std::unique_ptr<Writer>> Writer::Create(FileSystem* fs, std::string dir, uint64_t segment,
                                               uint64_t segment_size) {
  std::unique_ptr<Writer> w(new Writer(fs, std::move(dir), segment_size));
  COHORT_ASSIGN_OR_RETURN(w->file_, w->CreateSegment(segment));
  w->segment_ = segment;
  w->offset_ = w->synced_offset_ = kSegmentHeaderSize;
  return w;
}

Result<std::unique_ptr<Writer>> Writer::Resume(FileSystem* fs, std::string dir, uint64_t segment,
                                               uint64_t size, uint64_t segment_size) {
  if (size < kSegmentHeaderSize) {
    return Status::InvalidArgument("cannot resume segment " + std::to_string(segment) +
                                   " at offset " + std::to_string(size) + " (inside its header)");
  }
  std::unique_ptr<Writer> w(new Writer(fs, std::move(dir), segment_size));
  std::string path = JoinPath(w->dir_, SegmentFileName(segment));
  COHORT_ASSIGN_OR_RETURN(w->file_, fs->NewWritableFile(path, WriteMode::kAppend));
  if (w->file_->Size() != size) COHORT_RETURN_IF_ERROR(w->file_->Truncate(size));
  COHORT_RETURN_IF_ERROR(w->file_->Sync());
  w->segment_ = segment;
  w->offset_ = w->synced_offset_ = size;
  return w;
}

Result<std::unique_ptr<WritableFile>> Writer::CreateSegment(uint64_t segment) {
  std::string path = JoinPath(dir_, SegmentFileName(segment));
  // A file left by our own failed roll to this number may be replaced; anything else may not.
  WriteMode mode = roll_leftover_ ? WriteMode::kTruncate : WriteMode::kCreateExclusive;
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_->NewWritableFile(path, mode));
  roll_leftover_ = true;
  Status s = file->Append(EncodeSegmentHeader(segment));
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = fs_->SyncDir(dir_);
  if (!s.ok()) {
    (void)file->Close();
    // Best effort; if it stays, the next roll replaces it, and recovery copes with a headless
    // last segment.
    if (fs_->Remove(path).ok()) roll_leftover_ = false;
    return s;
  }
  roll_leftover_ = false;
  return file;
}

Status Writer::Broken() const {
  if (closed_) return Status::FailedPrecondition("WAL writer is closed");
  return Status::FailedPrecondition("WAL writer is broken by an earlier error (reopen the log): " +
                                    broken_.ToString());
}

Status Writer::Roll() {
  // Seal the old segment durably before anything lands in the new one.
  if (synced_offset_ < offset_) COHORT_RETURN_IF_ERROR(Sync());
  Result<std::unique_ptr<WritableFile>> next = CreateSegment(segment_ + 1);
  if (!next.ok()) return next.status();  // the old segment stays active; retry later
  (void)file_->Close();                  // synced already; a close error cannot lose data
  file_ = std::move(next).value();
  ++segment_;
  offset_ = synced_offset_ = kSegmentHeaderSize;
  return Status::Ok();
}

Result<Position> Writer::Append(std::string_view payload) {
  if (closed_ || !broken_.ok()) return Broken();
  if (payload.size() > kMaxRecordSize) {
    return Status::PayloadTooLarge("WAL record of " + std::to_string(payload.size()) +
                                   " bytes exceeds the " + std::to_string(kMaxRecordSize) +
                                   "-byte limit");
  }
  scratch_.clear();
  uint64_t end = EncodeRecord(&scratch_, offset_, payload);
  if (offset_ > kSegmentHeaderSize && end > segment_size_) {
    COHORT_RETURN_IF_ERROR(Roll());
    scratch_.clear();
    end = EncodeRecord(&scratch_, offset_, payload);
  }
  Status s = file_->Append(scratch_);
  if (!s.ok()) {
    // Cut off whatever part of the record reached the file, so nothing half-written remains.
    if (file_->Size() != offset_) {
      Status cut = file_->Truncate(offset_);
      if (!cut.ok()) broken_ = s;
    }
    return s;
  }
  offset_ = end;
  if (scratch_.capacity() > kKeepScratch) std::string().swap(scratch_);  // after a huge record
  return Position{segment_, offset_};
}

Status Writer::Sync() {
  if (closed_ || !broken_.ok()) return Broken();
  if (synced_offset_ == offset_) return Status::Ok();
  Status s = file_->Sync();
  if (!s.ok()) {
    broken_ = s;
    return s;
  }
  synced_offset_ = offset_;
  return Status::Ok();
}

Status Writer::Close() {
  if (closed_) return Status::Ok();
  Status s = broken_.ok() ? Sync() : Broken();
  Status c = file_->Close();
  file_.reset();
  closed_ = true;
  return s.ok() ? c : s;
}

}  // namespace cohort::wal
