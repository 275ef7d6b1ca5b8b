// wal::Log: the write-ahead log of one directory, as the agent and `cohort sync` use it.
//
// It ties a Writer (appends, rolls, syncs), Readers (iteration from a position) and the ack file
// together:
//   - Append(payload) returns the record's end position; the record is durable once Sync()
//     has returned OK after it (durable_end() >= that position). Acknowledge a client only then.
//   - Readers (NewReader, ReadUnacknowledged) see durable records only, follow the log as it
//     grows and across rolls, and skip damage (reported, never returned).
//   - MarkAcknowledged(p) records durably that the server holds every record ending at or
//     before p, then deletes every segment that lies wholly below p. It never moves backwards
//     and never past durable_end().
//   - Open() recovers: it cuts a torn tail off the last segment (the bytes after its last whole
//     record) so appends continue cleanly, syncs what the previous process left, deletes
//     acknowledged segments a crash left behind, and reports what it found. An unreadable or
//     implausible ack file is set aside and treated as "nothing acknowledged": records are sent
//     again (the server drops duplicates) rather than lost.
//
// One Log per directory: Open takes an exclusive lock on `dir/LOCK` (kFailedPrecondition when
// another process or Log holds it).
//
// Threading: every method may be called from any thread. Append, Sync and Close are serialised
// among themselves; MarkAcknowledged calls are serialised among themselves; the two groups and
// the readers run concurrently (one appender thread and one reader/acknowledger thread is the
// intended use). File I/O never happens under the lock that readers take. A Reader is itself
// single-threaded, and the Log must outlive its Readers. Records below the acknowledged
// position may vanish under a reader that is behind it (their segments are deleted); it then
// continues with the next segment.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "wal/file.h"
#include "wal/format.h"
#include "wal/reader.h"
#include "wal/writer.h"

namespace cohort::wal {

inline constexpr uint64_t kDefaultSegmentSize = 64ull << 20;
inline constexpr std::string_view kLockFileName = "LOCK";

struct LogOptions {
  FileSystem* fs = nullptr;  // null: FileSystem::Default(); must outlive the Log
  // A segment is rolled when a record would take it past this many bytes.
  uint64_t segment_size = kDefaultSegmentSize;
  bool create_if_missing = true;
};

// What Open found and did.
struct RecoveryReport {
  uint64_t segments = 0;  // segment files in the log after recovery
  // A torn tail cut off the last segment (torn_tail_bytes == 0: none).
  Position torn_tail;
  uint64_t torn_tail_bytes = 0;
  // Damage that was not cut off (in the middle of the log); readers skip these bytes. When the
  // last segment has any, appends go to a new segment.
  std::vector<Damage> damage;
  // Non-OK when the ack file could not be trusted (unreadable, or beyond the end of the log):
  // it was renamed to ACK.corrupt and every record counts as unacknowledged.
  Status ack_error;
  uint64_t deleted_segments = 0;   // wholly acknowledged segments removed
  std::vector<std::string> notes;  // one line per action taken, for the agent's log

  // No torn tail, no damage, no ack problem.
  bool clean() const { return torn_tail_bytes == 0 && damage.empty() && ack_error.ok(); }
  std::string ToString() const;
};

class Log {
 public:
  static Result<std::unique_ptr<Log>> Open(const std::string& dir, LogOptions options = {});
  // Closes without syncing (unsynced records may or may not survive); call Close() to sync.
  ~Log();

  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  const RecoveryReport& recovery() const { return recovery_; }
  const std::string& dir() const { return dir_; }

  // Appends one record (at most kMaxRecordSize bytes) and returns its end position. Errors:
  // kUnavailable for a full disk (nothing of the record stays; retry later), kIOError,
  // kPayloadTooLarge, kFailedPrecondition once the log is closed or broken (reopen it).
  Result<Position> Append(std::string_view payload);
  // Makes every appended record durable.
  Status Sync();
  // True once an append or sync failed in a way that leaves the log unusable (a failed sync:
  // the kernel may have dropped unsynced pages): reopen it, which recovers the segment.
  bool broken() const;
  // Syncs, closes the active segment and releases the directory lock. Readers keep working and
  // can drain the log; Append and Sync fail afterwards.
  Status Close();

  // Records durably that every record ending at or before `acknowledged` is held by the server,
  // then deletes the segments wholly below it. A position at or below the current one is a
  // no-op; one past durable_end() is kInvalidArgument. A failure to delete a segment is
  // returned, but the acknowledgement stands (the next Open deletes it).
  Status MarkAcknowledged(Position acknowledged);

  // A reader from `from` (the first record at or after it).
  std::unique_ptr<Reader> NewReader(Position from);
  // A reader from the acknowledged position: what is still to be sent.
  std::unique_ptr<Reader> ReadUnacknowledged();

  Position end() const;
  Position durable_end() const;
  Position acknowledged() const;

 private:
  class Source;

  Log(FileSystem* fs, std::string dir, LogOptions options);
  // Runs from Open, which holds append_mu_ (nothing else can see the Log yet).
  Status Recover() COHORT_REQUIRES(append_mu_);
  // Recovers the last segment: fills sealed_ / writer_ and the report.
  Status RecoverLastSegment(uint64_t last) COHORT_REQUIRES(append_mu_);
  // Sets an untrustworthy ack file aside and forgets the acknowledged position.
  Status DistrustAckFile(Status why) COHORT_EXCLUDES(mu_);
  // Copies the writer's positions (and a roll from `old_segment`, which ended at `old_end`)
  // into the reader-visible state.
  void Publish(uint64_t old_segment, uint64_t old_end) COHORT_REQUIRES(append_mu_);
  // Removes and returns the sealed segments wholly below ack_.
  std::vector<uint64_t> TakeAcknowledgedSegmentsLocked() COHORT_REQUIRES(mu_);
  std::string SegmentPath(uint64_t segment) const;

  FileSystem* const fs_;
  const std::string dir_;
  const LogOptions options_;
  std::unique_ptr<FileLock> lock_;
  RecoveryReport recovery_;
  std::unique_ptr<Source> source_;

  mutable Mutex append_mu_;  // serialises Append / Sync / Close
  std::unique_ptr<Writer> writer_ COHORT_GUARDED_BY(append_mu_);

  Mutex ack_mu_;  // serialises MarkAcknowledged (the ack file)

  // What readers see; held only for bookkeeping, never for I/O. Taken after the two above.
  mutable Mutex mu_ COHORT_ACQUIRED_AFTER(append_mu_, ack_mu_);
  // Segment number -> final size.
  std::map<uint64_t, uint64_t> sealed_ COHORT_GUARDED_BY(mu_);
  // The segment being appended to (0 after Close).
  uint64_t active_ COHORT_GUARDED_BY(mu_) = 0;
  Position end_ COHORT_GUARDED_BY(mu_);
  Position durable_end_ COHORT_GUARDED_BY(mu_);
  Position ack_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::wal
