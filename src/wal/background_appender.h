// BackgroundAppender: appends the chunks handed to it to a WritableFile on a thread of its own,
// so that producing the next chunk (fetching it, hashing it) overlaps writing this one (and
// hashing it, with Options::on_chunk). Used for
// an artifact's staging copy beside its hash (agent::HashFile) and for a download's file beside
// the fetching and hashing of the next range (`cohort artifact get`).
//
// Threading: Push and Finish are called by one thread (the producer); the appender's own thread
// is the only one that touches the file until Finish returns.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "cohort/status.h"
#include "core/mutex.h"
#include "wal/file.h"

namespace cohort::wal {

class BackgroundAppender {
 public:
  struct Options {
    size_t queued_chunks = 1;       // handed over and not written yet, at most (Push waits)
    uint64_t sync_every_bytes = 0;  // Sync after this many bytes written (0: never)
    bool sync_at_finish = false;    // Sync once everything is written
    // Called on the appender's thread with each chunk, in order, before it is written (a
    // download's hash: the producer goes on fetching meanwhile).
    std::function<void(std::string_view)> on_chunk;
  };
  BackgroundAppender(WritableFile* out, Options options);
  ~BackgroundAppender();  // Finish
  BackgroundAppender(const BackgroundAppender&) = delete;
  BackgroundAppender& operator=(const BackgroundAppender&) = delete;

  // Queues `chunk` (waits while `queued_chunks` are queued); the first write error, if any (the
  // chunk is then dropped).
  Status Push(std::string chunk) COHORT_EXCLUDES(mu_);
  // Writes what is queued (syncs when asked), ends the thread; the first error. The file stays
  // open (the caller closes it).
  Status Finish() COHORT_EXCLUDES(mu_);

 private:
  void Loop() COHORT_EXCLUDES(mu_);

  WritableFile* const out_;
  const Options options_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ COHORT_GUARDED_BY(mu_);
  bool done_ COHORT_GUARDED_BY(mu_) = false;
  Status error_ COHORT_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace cohort::wal
