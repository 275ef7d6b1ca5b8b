// IngestCache: what this server last wrote for each writer (its row keys, next step and the tail
// state of its series), so that the writer's next batch can be planned before its transaction
// and sent in one round trip (pg_ingest.cc). A hint only: the transaction compares it with the
// locked rows and writes nothing when it is stale (another server wrote for the writer, the run
// was deleted); the batch then takes the path that reads the rows first.
//
// Threading: thread-safe (one mutex); entries are immutable once stored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/mutex.h"
#include "series/tail.h"
#include "store/store.h"

namespace cohort::store::pg {

class IngestCache {
 public:
  struct Series {
    int64_t pk = 0;
    series::TailState tail;
  };
  struct Writer {
    int64_t writer_pk = 0;
    int64_t run_pk = 0;
    int64_t next_step = 0;
    std::unordered_map<std::string, Series> series;  // by key (system keys with "system/")
  };

  // Entries kept at most; storing one more drops them all (they are only hints).
  static constexpr size_t kMaxWriters = 4096;

  static std::string Key(const RunRef& ref, const std::string& label);

  std::shared_ptr<const Writer> Get(const std::string& key) const COHORT_EXCLUDES(mu_);
  void Put(const std::string& key, std::shared_ptr<const Writer> writer) COHORT_EXCLUDES(mu_);
  void Erase(const std::string& key) COHORT_EXCLUDES(mu_);
  // Forgets the writer with primary key `writer_pk` (a scan: for rare events, a writer's end).
  void EraseWriter(int64_t writer_pk) COHORT_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Writer>> writers_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::store::pg
