#include "wal/segment_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/coding.h"

namespace cohort::wal {

SegmentReader::SegmentReader(uint64_t segment, std::unique_ptr<SequentialFile> file,
                             uint64_t start_offset)
    : segment_(segment), file_(std::move(file)), start_offset_(start_offset) {
  block_.reserve(kBlockSize);
}

Result<bool> SegmentReader::Fill(uint64_t end) {
  if (file_offset_ >= end) return true;
  size_t have = block_.size();
  size_t want = size_t(end - file_offset_);
  block_.resize(have + want);
  Result<std::string_view> got = file_->Read(want, block_.data() + have);
  if (!got.ok()) {
    block_.resize(have);
    return got.status();
  }
  if (!got->empty() && got->data() != block_.data() + have) {
    std::memmove(block_.data() + have, got->data(), got->size());
  }
  block_.resize(have + got->size());
  file_offset_ += got->size();
  return got->size() == want;
}

Status SegmentReader::EnterBlock() {
  uint64_t start = pos_ - pos_ % kBlockSize;
  if (start == block_start_) return Status::Ok();
  // Blocks are only ever entered going forward, so the file is at or before `start`.
  if (file_offset_ < start) {
    COHORT_RETURN_IF_ERROR(file_->Skip(start - file_offset_));
    file_offset_ = start;
  }
  block_start_ = start;
  block_.clear();
  return Status::Ok();
}

void SegmentReader::Report(uint64_t offset, uint64_t bytes, std::string reason,
                           std::vector<Damage>* damage) {
  if (bytes == 0) return;
  if (!damage->empty()) {
    Damage& last = damage->back();
    if (last.position.segment == segment_ && last.position.offset + last.bytes == offset) {
      last.bytes += bytes;  // one region; keep the first reason, the cause
      return;
    }
  }
  damage->push_back(Damage{Position{segment_, offset}, bytes, std::move(reason)});
}

void SegmentReader::SkipBlock(uint64_t limit, std::string reason, std::vector<Damage>* damage) {
  uint64_t block_end = block_start_ + kBlockSize;
  uint64_t end = std::min(block_end, limit);
  if (end > record_start_) Report(record_start_, end - record_start_, std::move(reason), damage);
  in_record_ = false;
  payload_.clear();
  pos_ = block_end;
  record_start_ = pos_;
}

bool SegmentReader::AtLimit(uint64_t limit, bool sealed, std::vector<Damage>* damage) {
  if (!sealed) return false;  // the rest may still be written: keep our place
  if (limit > record_start_) {
    Report(record_start_, limit - record_start_,
           in_record_ ? "record cut short: segment ends before its last fragment"
                      : "record cut short at the end of the segment",
           damage);
  }
  in_record_ = false;
  payload_.clear();
  pos_ = std::max(pos_, limit);
  record_start_ = pos_;
  return false;
}

Result<bool> SegmentReader::CheckHeader(uint64_t limit, bool sealed, std::vector<Damage>* damage) {
  uint64_t have = std::min(limit, kSegmentHeaderSize);
  COHORT_ASSIGN_OR_RETURN(bool complete, Fill(have));
  (void)complete;
  if (block_.size() < kSegmentHeaderSize) {
    if (sealed) {
      Report(0, block_.size(), "segment shorter than its header", damage);
      dead_ = true;
    }
    return false;
  }
  Status s = CheckSegmentHeader(block_, segment_);
  if (s.code() == StatusCode::kFailedPrecondition) return s;
  if (!s.ok()) {
    Report(0, limit, "unreadable segment header: " + s.message(), damage);
    dead_ = true;
    return false;
  }
  header_checked_ = true;
  pos_ = std::max(start_offset_, kSegmentHeaderSize);
  record_start_ = pos_;
  return true;
}

Result<bool> SegmentReader::Next(uint64_t limit, bool sealed, Record* record,
                                 std::vector<Damage>* damage) {
  if (dead_) return false;
  if (!header_checked_) {
    COHORT_ASSIGN_OR_RETURN(bool ok, CheckHeader(limit, sealed, damage));
    if (!ok) return false;
  }
  // record_start_ is kept at the first byte of the record being parsed, which includes any
  // padding in front of its first fragment.
  while (true) {
    if (pos_ >= limit) return AtLimit(limit, sealed, damage);
    COHORT_RETURN_IF_ERROR(EnterBlock());
    const uint64_t block_end = block_start_ + kBlockSize;
    const uint64_t left = block_end - pos_;
    if (left < kFragmentHeaderSize) {  // zero padding up to the next block
      if (block_end > limit) return AtLimit(limit, sealed, damage);
      pos_ = block_end;
      continue;
    }
    if (pos_ + kFragmentHeaderSize > limit) return AtLimit(limit, sealed, damage);
    COHORT_ASSIGN_OR_RETURN(bool got, Fill(pos_ + kFragmentHeaderSize));
    if (!got) return AtLimit(file_offset_, sealed, damage);

    const char* h = block_.data() + (pos_ - block_start_);
    const uint32_t crc = coding::DecodeFixed32(h);
    const uint64_t length = coding::DecodeFixed32(h + 4);
    const uint8_t type = uint8_t(h[8]);
    if (type < uint8_t(FragmentType::kFull) || type > uint8_t(FragmentType::kLast)) {
      SkipBlock(limit, "bad fragment type " + std::to_string(type), damage);
      continue;
    }
    if (length > left - kFragmentHeaderSize) {
      SkipBlock(limit, "fragment length " + std::to_string(length) + " overruns its block", damage);
      continue;
    }
    const uint64_t fragment_end = pos_ + kFragmentHeaderSize + length;
    if (fragment_end > limit) return AtLimit(limit, sealed, damage);
    COHORT_ASSIGN_OR_RETURN(got, Fill(fragment_end));
    if (!got) return AtLimit(file_offset_, sealed, damage);
    h = block_.data() + (pos_ - block_start_);  // Fill may have moved the buffer
    if (FragmentChecksum(h + 4, length) != crc) {
      SkipBlock(limit, "checksum mismatch", damage);
      continue;
    }
    std::string_view data(h + kFragmentHeaderSize, length);

    switch (FragmentType(type)) {
      case FragmentType::kFull:
      case FragmentType::kFirst:
        if (in_record_) {
          Report(record_start_, pos_ - record_start_,
                 "record cut short: a new record starts before its last fragment", damage);
          in_record_ = false;
          record_start_ = pos_;
        }
        if (FragmentType(type) == FragmentType::kFull) {
          record->position = Position{segment_, record_start_};
          record->next = Position{segment_, fragment_end};
          record->payload.assign(data);
          pos_ = fragment_end;
          record_start_ = pos_;
          return true;
        }
        in_record_ = true;
        payload_.assign(data);
        pos_ = fragment_end;
        break;
      case FragmentType::kMiddle:
      case FragmentType::kLast:
        if (!in_record_) {
          Report(record_start_, fragment_end - record_start_,
                 "fragment without the start of its record", damage);
          pos_ = fragment_end;
          record_start_ = pos_;
          break;
        }
        if (payload_.size() + length > kMaxRecordSize) {
          SkipBlock(limit, "record larger than " + std::to_string(kMaxRecordSize) + " bytes",
                    damage);
          break;
        }
        payload_.append(data);
        pos_ = fragment_end;
        if (FragmentType(type) == FragmentType::kLast) {
          record->position = Position{segment_, record_start_};
          record->next = Position{segment_, fragment_end};
          record->payload = std::move(payload_);
          payload_.clear();
          in_record_ = false;
          record_start_ = pos_;
          return true;
        }
        break;
    }
  }
}

}  // namespace cohort::wal
