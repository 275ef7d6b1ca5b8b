// SegmentReader: parses the records of one segment file front to back (format.h).
//
// It reads only bytes below a limit given on each call, which may grow between calls (the
// durable end of the segment being written), and keeps its place, so it can follow a growing
// segment. Damaged bytes never stop it: a fragment with a bad type, length or checksum is
// reported as Damage and reading resumes at the next block boundary. Its memory is bounded by
// one block plus kMaxRecordSize whatever the file holds, and it never reads past `limit`.
//
// Threading: single-threaded (external synchronisation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "wal/file.h"
#include "wal/format.h"

namespace cohort::wal {

class SegmentReader {
 public:
  // Reads segment number `segment` from `file` (positioned at its first byte), returning
  // records that begin at or after `start_offset` (which must be a record boundary; an offset
  // inside the header means "from the first record").
  SegmentReader(uint64_t segment, std::unique_ptr<SequentialFile> file, uint64_t start_offset);

  // Reads the next record that lies wholly below `limit`: true and *record filled, or false
  // when no further record is complete below `limit`. With `sealed` (the segment will never
  // hold more than `limit` bytes; `limit` may exceed the file's size), bytes of an incomplete
  // record before `limit` are reported as damage; without it the reader waits for the limit to
  // grow. Damage found is appended to *damage (adjacent regions merged). Errors: kIOError from
  // the file, kFailedPrecondition for a segment of an unsupported format version.
  Result<bool> Next(uint64_t limit, bool sealed, Record* record, std::vector<Damage>* damage);

  // Where the next record would begin.
  Position position() const { return {segment_, record_start_}; }
  uint64_t segment() const { return segment_; }

 private:
  Result<bool> CheckHeader(uint64_t limit, bool sealed, std::vector<Damage>* damage);
  // Makes the current block buffer hold the block that contains pos_.
  Status EnterBlock();
  // Reads until the buffer holds every byte below `end` (within the current block). False when
  // the file ended first.
  Result<bool> Fill(uint64_t end);
  // Nothing more below `limit`; reports an incomplete record when `sealed`.
  bool AtLimit(uint64_t limit, bool sealed, std::vector<Damage>* damage);
  // Drops the record in progress and the rest of the current block.
  void SkipBlock(uint64_t limit, std::string reason, std::vector<Damage>* damage);
  void Report(uint64_t offset, uint64_t bytes, std::string reason, std::vector<Damage>* damage);

  const uint64_t segment_;
  std::unique_ptr<SequentialFile> file_;
  const uint64_t start_offset_;
  bool header_checked_ = false;
  bool dead_ = false;          // unreadable header: the segment yields nothing
  uint64_t file_offset_ = 0;   // bytes of the file consumed (read or skipped)
  uint64_t block_start_ = 0;   // file offset of block_[0], a multiple of kBlockSize
  std::string block_;          // the bytes [block_start_, file_offset_)
  uint64_t pos_ = 0;           // parse cursor (file offset)
  uint64_t record_start_ = 0;  // where the record being parsed began
  bool in_record_ = false;     // between a kFirst fragment and its kLast
  std::string payload_;        // fragments gathered so far
};

}  // namespace cohort::wal
