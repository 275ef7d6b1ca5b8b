// RunIngestCache: what ingest has learned about runs so that a batch need not ask the database
// again (sql_store.h): the run's histogram and media keys known to be stored, with their type
// (the key budget checks only the others, as scalar keys are checked only when the writer has no
// series for them; the one-type-per-key check looks up only the others). The run's media bytes
// are not here: they are a column of the run, moved under its row lock (sql_store_media.cc).
//
// Keys are facts once committed: a batch's keys are added after its transaction committed
// (Settle), and only the run's deletion (or an import) removes them (Forget, Clear).
//
// Threading: thread-safe (one mutex, never held across a query).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "store/ingest_batch.h"

namespace cohort::store {

class RunIngestCache {
 public:
  // Runs kept at most; one more drops them all (they are loaded again when needed).
  static constexpr size_t kMaxRuns = 4096;

  // What one ingest call did to the cache, settled once its transaction's outcome is known.
  struct Note {
    int64_t run_pk = 0;    // 0: the call did not get as far as its checks (Begin)
    uint64_t forgets = 0;  // Forget/Clear calls before Begin
    // Histogram and media keys the batch stores in the run, with their type.
    std::vector<std::pair<std::string, std::string>> keys;
    // The batch's media rows were refused (IngestResult::media_refused): its media keys are not
    // stored by it (a key cached as an image that no row holds would refuse it as a scalar).
    void DropMediaKeys() {
      std::erase_if(keys, [](const auto& k) { return k.second != kHistogramKeyType; });
    }
  };

  // Of `keys`, those not known to be stored in the run (in their order).
  std::vector<std::string> UnknownKeys(int64_t run_pk, const std::vector<std::string>& keys) const
      COHORT_EXCLUDES(mu_);

  // Of `keys`, those known to be stored in the run, with their type.
  std::map<std::string, std::string> KnownTypes(int64_t run_pk,
                                                const std::vector<std::string>& keys) const
      COHORT_EXCLUDES(mu_);

  // A call's checks of the run `run_pk` begin (inside its transaction): `note` names the run.
  void Begin(Note* note, int64_t run_pk) const COHORT_EXCLUDES(mu_);

  // After the call's transaction: committed, its keys become known, unless a Forget or Clear
  // came after its Begin (the run may be gone, and on SQLite its pk given to a new run: the
  // keys would be another run's). Clears `note` (a retried transaction settles the failed
  // attempt first).
  void Settle(Note* note, bool committed) COHORT_EXCLUDES(mu_);

  // The run is being deleted: called inside the deleting transaction (on SQLite under the write
  // lock, so no call can Begin with the run's pk until its deletion committed) and after it.
  void Forget(int64_t run_pk) COHORT_EXCLUDES(mu_);
  void Clear() COHORT_EXCLUDES(mu_);  // rows were imported

 private:
  struct RunEntry {
    std::unordered_map<std::string, std::string> keys;  // key -> type
  };
  RunEntry& Entry(int64_t run_pk) COHORT_REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<int64_t, RunEntry> runs_ COHORT_GUARDED_BY(mu_);
  uint64_t forgets_ COHORT_GUARDED_BY(mu_) = 0;  // Forget and Clear calls so far
};

}  // namespace cohort::store
