// wal::Reader: iterates the records of a log directory across its segments, from a position.
//
// Which segments exist and how far each may be read come from a SegmentSource: a live Log
// (log.h) exposes only durable bytes and lets the reader follow the log as it grows; a
// directory snapshot (OpenDirectory) exposes every segment file as it is on disk, for tools and
// tests. Damaged bytes are skipped and collected (TakeDamage), never returned as records.
//
// Threading: a Reader is single-threaded (external synchronisation). Its SegmentSource must be
// thread-safe if the log changes under it, and must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "wal/file.h"
#include "wal/format.h"
#include "wal/segment_reader.h"

namespace cohort::wal {

// What a Reader may read.
class SegmentSource {
 public:
  struct Extent {
    uint64_t limit = 0;   // bytes of the segment that may be read
    bool sealed = false;  // the segment will never grow past `limit`
  };
  virtual ~SegmentSource() = default;
  // The readable extent of `segment`; nullopt when the segment does not exist (any more).
  virtual std::optional<Extent> GetExtent(uint64_t segment) = 0;
  // The smallest existing segment number greater than `after`; nullopt when there is none.
  virtual std::optional<uint64_t> NextSegment(uint64_t after) = 0;
};

class Reader {
 public:
  // Reads `dir` through `fs`, starting with the first record at or after `from`. `source` must
  // outlive the reader.
  Reader(FileSystem* fs, std::string dir, SegmentSource* source, Position from);
  ~Reader();

  // A reader of the segment files in `dir` as they are now: every segment counts as sealed at
  // its current size, so an incomplete record at the end of the last one is reported as damage.
  static Result<std::unique_ptr<Reader>> OpenDirectory(FileSystem* fs, const std::string& dir,
                                                       Position from);

  // The next record: true and *record filled, or false when no further record is readable now
  // (a live log may have more later: call again). Damage does not stop the reader. Errors:
  // kIOError from the file system, kFailedPrecondition for an unsupported format version.
  Result<bool> Next(Record* record);

  // Where the next record would begin.
  Position position() const;

  // Damage found since the last call (oldest first).
  std::vector<Damage> TakeDamage();

 private:
  FileSystem* fs_;
  std::string dir_;
  SegmentSource* source_;
  std::unique_ptr<SegmentSource> owned_source_;  // for OpenDirectory
  Position from_;
  bool started_ = false;
  std::unique_ptr<SegmentReader> current_;  // null before the first segment or past a gone one
  uint64_t current_segment_ = 0;
  std::vector<Damage> damage_;
};

}  // namespace cohort::wal
