// UploadHashes: the SHA-256 of an upload computed while its parts arrive, so that completing it
// does not read the whole blob back (docs/artifacts.md, "Uploads").
//
// Parts are hashed in order: a part that is next in order when its PUT begins is hashed by that
// PUT as its bytes are written (and counted once they are durable); the parts after it that
// arrived earlier are read back from the store (where the page cache usually still has them)
// when their turn comes. A part is never read back while a PUT of it is being written, and a
// part sent again after it was hashed (or while it is being hashed) spoils the upload's state: it
// is dropped, and the store reads the whole blob at completion, as it does after a server restart
// (the state is in memory only). A state is only a shortcut: the store compares the final digest
// with the announced one and, when they differ, reads the whole blob before it refuses anything.
//
// Threading: thread-safe. Hashing happens outside the lock, by one thread per upload at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "core/mutex.h"
#include "core/sha256.h"

namespace cohort::blob {

class UploadHashes {
 public:
  // The hash of the parts [0, parts) of an upload.
  struct Prefix {
    std::unique_ptr<Sha256> hash;
    int64_t parts = 0;
  };
  // Whether part n is durable in the store (its marker exists).
  using StoredFn = std::function<bool(int64_t part)>;
  // Feeds part n's bytes, read back from the store, into `hash` (in small reads: parts are
  // large).
  using HashStoredFn = std::function<Status(int64_t part, Sha256* hash)>;

  // A PUT of `part` of `upload` (any key naming one upload) is about to write it. Sets `*hash`
  // to the upload's hash when the part is next in order and nothing else writes or hashes it:
  // the PUT feeds the part's bytes into it, in order, as it writes them, and passes hashed=true
  // to EndPart; null otherwise (the part is read back when its turn comes). kUnavailable while
  // the upload is being completed (BeginCompletion): nothing may write into bytes being
  // checked and published (EndPart is not called then).
  Status BeginPart(const std::string& upload, int64_t part, Sha256** hash) COHORT_EXCLUDES(mu_);
  // That PUT ended: the part is durable when `durable`; `hashed` when BeginPart handed it the
  // hash (all the part's bytes went in when it is durable; a failed PUT spoils the state). Then
  // hashes, in order, the parts that `stored` says are durable and nobody writes (read with
  // `hash_stored`), up to `part_count`.
  void EndPart(const std::string& upload, int64_t part, bool durable, bool hashed,
               int64_t part_count, const StoredFn& stored, const HashStoredFn& hash_stored)
      COHORT_EXCLUDES(mu_);
  // The upload is being checked and published: kFailedPrecondition while a PUT of it is
  // writing (complete again once it is stored) or another completion runs; else no PUT may
  // begin until EndCompletion.
  Status BeginCompletion(const std::string& upload) COHORT_EXCLUDES(mu_);
  void EndCompletion(const std::string& upload) COHORT_EXCLUDES(mu_);
  // Takes the upload's state for its completion; nullopt when there is none worth using (none,
  // spoiled, or a part being written or hashed).
  std::optional<Prefix> Take(const std::string& upload) COHORT_EXCLUDES(mu_);
  void Forget(const std::string& upload) COHORT_EXCLUDES(mu_);
  size_t size() const COHORT_EXCLUDES(mu_);

 private:
  struct State {
    std::unique_ptr<Sha256> hash = std::make_unique<Sha256>();
    int64_t next = 0;                // parts [0, next) are in `hash`
    bool hashing = false;            // a thread is hashing part `next` (or a PUT writing it)
    bool spoiled = false;            // a hashed part was written again: drop at the end
    std::map<int64_t, int> writing;  // parts being written, by how many PUTs
  };

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<State>> states_ COHORT_GUARDED_BY(mu_);
  std::set<std::string> completing_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::blob
