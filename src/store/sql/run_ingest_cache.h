// RunIngestCache: what ingest has learned about runs so that a batch need not ask the database
// again (sql_store.h): the run's histogram and media keys known to be stored, with their type
// (the key budget checks only the others, as scalar keys are checked only when the writer has no
// series for them; the one-type-per-key check looks up only the others), and the run's media bytes (the media budget, --max-run-media-bytes), loaded from the
// media table on first use and then moved by each batch.
//
// Keys are facts once committed: a batch's keys are added after its transaction committed
// (Settle), and only the run's deletion (or an import) removes them (Forget, Clear). The media
// total moves inside the transaction that writes the rows (so that the next batch of a SQLite
// group, in the same transaction, sees it) and is moved back when that transaction does not
// commit. What may differ from the table: a total moved by a transaction that has not committed
// yet (another one then sees the bytes a little early), and on PostgreSQL, with several servers,
// what the others stored since it was loaded (as the sum read in the transaction before it).
//
// Threading: thread-safe (one mutex, never held across a query).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mutex.h"

namespace cohort::store {

// The type of a histogram key, as the cache and the key type check name it (media keys have
// their media type: "image", "table", ...).
inline constexpr const char* kHistogramKeyType = "histogram";

class RunIngestCache {
 public:
  // Runs kept at most; one more drops them all (they are loaded again when needed).
  static constexpr size_t kMaxRuns = 4096;

  // What one ingest call did to the cache, settled once its transaction's outcome is known.
  struct Note {
    int64_t run_pk = 0;             // 0: the call did not get as far as its checks
    // Histogram and media keys the batch stores in the run, with their type.
    std::vector<std::pair<std::string, std::string>> keys;
    std::optional<int64_t> media;   // bytes the call added to the run's media total
    uint64_t loaded = 0;            // ... to the total of that load (RunEntry::loaded)
  };

  // Of `keys`, those not known to be stored in the run (in their order).
  std::vector<std::string> UnknownKeys(int64_t run_pk, const std::vector<std::string>& keys) const
      COHORT_EXCLUDES(mu_);

  // Of `keys`, those known to be stored in the run, with their type.
  std::map<std::string, std::string> KnownTypes(int64_t run_pk,
                                                const std::vector<std::string>& keys) const
      COHORT_EXCLUDES(mu_);

  // The run's media bytes, when loaded.
  std::optional<int64_t> MediaBytes(int64_t run_pk) const COHORT_EXCLUDES(mu_);
  // Sets the run's media bytes to `loaded` (the media table's sum) unless another call loaded
  // them first; the run's total either way.
  int64_t LoadMediaBytes(int64_t run_pk, int64_t loaded) COHORT_EXCLUDES(mu_);
  // Adds `delta` to the run's media bytes when they are loaded (noted in `note`).
  void AddMediaBytes(int64_t run_pk, int64_t delta, Note* note) COHORT_EXCLUDES(mu_);

  // After the call's transaction: committed, its keys become known; not committed, its media
  // bytes are taken back. Clears `note` (a retried transaction settles the failed attempt first).
  void Settle(Note* note, bool committed) COHORT_EXCLUDES(mu_);

  void Forget(int64_t run_pk) COHORT_EXCLUDES(mu_);  // the run was deleted
  void Clear() COHORT_EXCLUDES(mu_);                 // rows were imported

 private:
  struct RunEntry {
    std::unordered_map<std::string, std::string> keys;  // key -> type
    std::optional<int64_t> media_bytes;
    uint64_t loaded = 0;  // which load of media_bytes (a total dropped and loaded again is new)
  };
  RunEntry& Entry(int64_t run_pk) COHORT_REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<int64_t, RunEntry> runs_ COHORT_GUARDED_BY(mu_);
  uint64_t loads_ COHORT_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::store
