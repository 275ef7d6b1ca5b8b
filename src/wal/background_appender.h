// BackgroundAppender: appends the chunks handed to it to a WritableFile on a thread of its own,
// so that producing the next chunk (fetching it, hashing it) overlaps writing this one (and
// hashing it, with Options::on_chunk, on a third thread beside the write). Used for
// an artifact's staging copy beside its hash (agent::HashFile) and for a download's file beside
// the fetching and hashing of the next range (`cohort artifact get`).
//
// Threading: Push and Finish are called by one thread (the producer); the appender's own thread
// is the only one that touches the file until Finish returns; on_chunk runs on the hook thread,
// one chunk at a time, each call finished before the next begins, all before Finish returns.
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
    // Called with each chunk, in order, on a thread of its own while the appender's thread
    // writes that same chunk (a download's hash: it overlaps the write, and the producer goes
    // on fetching meanwhile); a chunk is done when both returned. Must not throw.
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
  // The hook thread: runs on_chunk on each chunk Loop hands it while Loop writes the chunk.
  void HookLoop() COHORT_EXCLUDES(hook_mu_);
  // Writes `chunk`, with on_chunk running on it meanwhile when there is one.
  Status WriteChunk(const std::string& chunk) COHORT_EXCLUDES(hook_mu_);

  WritableFile* const out_;
  const Options options_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ COHORT_GUARDED_BY(mu_);
  bool done_ COHORT_GUARDED_BY(mu_) = false;
  Status error_ COHORT_GUARDED_BY(mu_);
  Mutex hook_mu_;
  CondVar hook_cv_;
  // The chunk the hook thread runs on_chunk on (null: none; it sets null when done).
  const std::string* hook_chunk_ COHORT_GUARDED_BY(hook_mu_) = nullptr;
  bool hook_stop_ COHORT_GUARDED_BY(hook_mu_) = false;
  std::thread hook_thread_;  // only with on_chunk; started before thread_, joined after it
  std::thread thread_;
};

}  // namespace cohort::wal
