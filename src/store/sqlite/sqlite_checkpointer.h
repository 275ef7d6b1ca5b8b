// Checkpointer: moves WAL checkpoints of the SQLite store off the write path.
//
// By default SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 pages, on the
// write connection and under the store's write lock; with synchronous=NORMAL a checkpoint
// fsyncs the WAL and the database file, so every ~80th ingest batch of the fleet load waited
// for two fsyncs (~6 ms each on the development machine) and every batch behind it with it.
// Here the write connection's automatic checkpoints are off (wal_autocheckpoint=0); its WAL hook
// wakes a thread that runs PASSIVE checkpoints on a connection of its own once the WAL holds
// kStartFrames frames. A passive checkpoint never blocks the writer or readers: it copies what
// no reader still needs and the writer keeps appending meanwhile. Should the WAL still reach
// kWriterFrames frames (the thread starved, or readers pin old frames), the writer checkpoints
// itself, passively too, as SQLite would have done: the WAL stays bounded.
//
// The thresholds are low on purpose. SQLite rewinds the WAL to its start only when a write
// begins after a checkpoint copied every frame and no reader still reads from the WAL; under a
// steady load (readers at all times, 1,000 batches a second) that moment is rare, and the longer
// the WAL the more every commit and read pays (the WAL index to search, pages spread over more
// frames). With 1,000 / 10,000 (SQLite's threshold, then ~40 MB) the fleet benchmark's ingest p99
// was 74-165 ms; with 500 / 2,000 (~8 MB) 36-56 ms, the store's mean per batch 7-12 ms -> 5-8 ms
// (docs/reliability.md, "Checkpoint thresholds"). Without the writer's own checkpoints at all it
// was 0.7-1.2 s.
//
// Durability is unchanged: a commit is as durable as the WAL makes it (synchronous=NORMAL: it
// survives a crash of the process; FULL: power loss too); checkpoints only copy committed pages
// into the database file.
//
// Threading: OnCommit() is called by SQLite on the thread that commits on the write connection
// (under the store's write lock); the checkpointer's own connection is used by its thread only.
// Start/Stop from the owner's thread.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "cohort/status.h"
#include "core/mutex.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

class Checkpointer {
 public:
  static constexpr int kStartFrames = 500;    // wake the thread (~2 MB of WAL)
  static constexpr int kWriterFrames = 2000;  // the writer checkpoints itself (~8 MB of WAL)

  Checkpointer() = default;
  ~Checkpointer();  // Stop()
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Takes over the checkpoints of `writer` (turns its automatic checkpoints off, installs the
  // WAL hook) and starts the thread with its own connection to `path`.
  Status Start(Db* writer, const std::string& path, int busy_timeout_ms);
  // Stops the thread (after the checkpoint it may be running) and gives `writer` its automatic
  // checkpoints back. Idempotent.
  void Stop() COHORT_EXCLUDES(mu_);

  // Checkpoints run by the thread and by the writer itself so far (tests, benchmarks).
  int64_t background_checkpoints() const COHORT_EXCLUDES(mu_);
  int64_t writer_checkpoints() const COHORT_EXCLUDES(mu_);

 private:
  static int WalHook(void* self, sqlite3* db, const char* name, int frames);
  void Loop() COHORT_EXCLUDES(mu_);

  Db* writer_ = nullptr;
  std::unique_ptr<Db> own_;
  std::thread thread_;

  // Taken inside the store's write lock (WalHook runs in the writer's COMMIT).
  mutable Mutex mu_;
  CondVar cv_;
  bool wanted_ COHORT_GUARDED_BY(mu_) = false;
  bool stopping_ COHORT_GUARDED_BY(mu_) = false;
  int64_t background_ COHORT_GUARDED_BY(mu_) = 0;
  int64_t by_writer_ COHORT_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::store::sqlite
