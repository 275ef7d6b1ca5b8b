// wal::Writer: appends records to the active segment of a log directory and rolls to a new,
// higher-numbered segment when the active one would grow past a size threshold.
//
// Durability: Append only hands bytes to the operating system; Sync (fdatasync) makes them
// durable, and only then may a caller acknowledge them. A roll syncs the old segment first and
// creates the new one with a synced header and a synced directory entry, so every segment but
// the active one is wholly durable.
//
// Failures: an Append that fails (ENOSPC: kUnavailable; EIO: kIOError) cuts the segment back to
// its previous end, so no part of the record stays in the file, and the writer stays usable
// (retry when space is back). If that cut fails too, or a Sync fails (after a failed fsync the
// kernel may have dropped the unsynced pages, so retrying it proves nothing), the writer is
// broken: every later call returns kFailedPrecondition carrying the first error, and the log
// must be reopened, which recovers the segment.
//
// Threading: single-threaded (external synchronisation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "wal/file.h"
#include "wal/format.h"

namespace cohort::wal {

class Writer {
 public:
  // Starts segment `segment` as a new file in `dir` (kAlreadyExists if it exists).
  static Result<std::unique_ptr<Writer>> Create(FileSystem* fs, std::string dir, uint64_t segment,
                                                uint64_t segment_size);
  // Continues segment `segment`, whose first `size` bytes are a valid header and whole
  // records; anything after them is cut off, and the `size` bytes are synced (a crashed
  // process may have left them in the page cache only).
  static Result<std::unique_ptr<Writer>> Resume(FileSystem* fs, std::string dir, uint64_t segment,
                                                uint64_t size, uint64_t segment_size);
  ~Writer();

  // Appends one record and returns its end: the position just past it (which is the position
  // to acknowledge it with). Rolls first when the record would take the active segment past
  // the threshold (a record larger than the threshold gets a segment of its own).
  // kPayloadTooLarge above kMaxRecordSize.
  Result<Position> Append(std::string_view payload);
  // Makes every appended record durable.
  Status Sync();
  // Syncs and closes the active segment. The writer is unusable afterwards.
  Status Close();

  Position end() const { return {segment_, offset_}; }
  // The durable prefix of the log: everything before it survives a crash.
  Position synced_end() const { return {segment_, synced_offset_}; }
  uint64_t segment() const { return segment_; }
  // OK, or the error that broke the writer.
  const Status& broken() const { return broken_; }

 private:
  Writer(FileSystem* fs, std::string dir, uint64_t segment_size);
  // Creates segment `segment` with a durable header and directory entry.
  Result<std::unique_ptr<WritableFile>> CreateSegment(uint64_t segment);
  Status Roll();
  Status Broken() const;

  FileSystem* fs_;
  const std::string dir_;
  const uint64_t segment_size_;
  std::unique_ptr<WritableFile> file_;
  uint64_t segment_ = 0;
  uint64_t offset_ = 0;         // end of the last whole record
  uint64_t synced_offset_ = 0;  // durable prefix of the active segment
  Status broken_;
  bool closed_ = false;
  bool roll_leftover_ = false;  // a failed roll left segment_ + 1 behind
  std::string scratch_;         // encoded record, reused
};

}  // namespace cohort::wal
