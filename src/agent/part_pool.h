// PartPool: threads that PUT parts of files to the blob store's upload route
// (PUT /api/v1/blobs/{entity}/{sha256}/parts/{n}, docs/artifacts.md "Uploads"), each part read
// from its file through the wal::FileSystem when its turn comes (never a whole file in memory:
// one part per thread). Shared by the node agent's background uploads (ArtifactUploader) and
// `cohort artifact put`, so that both send parts the same way, several at a time.
//
// Also the answers of the upload routes as statuses (AnswerStatus), which both retry alike.
//
// Threading: Run is called by one thread at a time; Abort from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "agent/http_client.h"
#include "cohort/status.h"
#include "core/mutex.h"
#include "wal/file.h"

namespace cohort::agent {

// OK for a 2xx answer. Transient outcomes, to retry: kUnavailable (no answer),
// kResourceExhausted (408, 429, 5xx); kUnauthenticated (401) and kPermissionDenied (403): a key
// being fixed. Any other answer is kFailedPrecondition with `what` and the server's message.
Status AnswerStatus(const Result<HttpResponse>& r, const std::string& what);

// One part to PUT: bytes [offset, offset + length) of `source` to `path` of `base_url`.
struct PartJob {
  std::string base_url;
  std::string api_key;
  std::string path;    // request path, with ?size=
  std::string source;  // file
  int64_t offset = 0;
  int64_t length = 0;
  std::string id;  // the caller's, for progress
};

// Parts in flight by default, for the agent and `cohort artifact put` alike.
inline constexpr int kDefaultParallelParts = 2;
// $COHORT_ARTIFACT_PARTS (1 to 64) when set to a number, else `fallback`.
int ParallelPartsFromEnvironment(int fallback = kDefaultParallelParts);
// $COHORT_ARTIFACT_PART_DELAY_MS (0 or more) when set to a number, else `fallback`: a pause
// before each part (a slow link, for the tests that stop an upload midway).
int64_t PartDelayFromEnvironment(int64_t fallback = 0);

class PartPool {
 public:
  // `threads` parts in flight at most; `delay_ms` before each PUT (a slow link, for tests).
  PartPool(int threads, HttpClientOptions http, wal::FileSystem* fs, int64_t delay_ms = 0);
  ~PartPool();  // Abort, then joins the threads
  PartPool(const PartPool&) = delete;
  PartPool& operator=(const PartPool&) = delete;

  // PUTs every job, at most one per thread at a time; OK when all were stored, else the first
  // failure (the jobs not started yet are dropped then). `on_done` is called on a pool thread
  // after each part stored (several at once: it must be thread-safe). `skip_rest` (optional,
  // thread-safe) is asked before each part: once it says true, the parts not started are
  // dropped (for a caller that learned meanwhile that they are not needed), those in flight
  // finish, and Run answers as if the dropped ones had been stored.
  Status Run(std::vector<PartJob> jobs, std::function<void(const PartJob&)> on_done,
             std::function<bool()> skip_rest = {}) COHORT_EXCLUDES(mu_);
  // Aborts the requests in flight; Run returns kUnavailable at once, and so does every later
  // Run. A part in flight may still call its Run's `on_done` after that Run returned: with
  // Abort, `on_done` must capture nothing that dies before the pool.
  void Abort() COHORT_EXCLUDES(mu_);

 private:
  void Work() COHORT_EXCLUDES(mu_);
  // Reads the part (never the whole file) and PUTs it.
  Status Put(HttpClient* client, const PartJob& job, std::string* buf);

  const HttpClientOptions http_;
  wal::FileSystem* const fs_;
  const int64_t delay_ms_;
  Mutex mu_;
  std::function<void(const PartJob&)> on_done_ COHORT_GUARDED_BY(mu_);  // the Run's
  std::function<bool()> skip_rest_ COHORT_GUARDED_BY(mu_);              // the Run's
  CondVar cv_;
  std::deque<PartJob> queue_ COHORT_GUARDED_BY(mu_);
  size_t left_ COHORT_GUARDED_BY(mu_) = 0;
  Status first_error_ COHORT_GUARDED_BY(mu_);
  bool aborted_ COHORT_GUARDED_BY(mu_) = false;
  std::vector<HttpClient*> clients_ COHORT_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace cohort::agent
