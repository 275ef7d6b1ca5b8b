// The media cells of recently served tables (core/table_cells.h), so that the bytes of a page of
// cells (GET .../media/{sha256}?table=..., one request a cell) parse their table once, not once a
// cell. Keyed by what names a document for good: the entity, the table row's digest and its
// artifact reference (a vendor table's document is its artifact's once that is committed; a
// table read from its run file while the artifact is not committed yet is not kept). Bounded:
// the least recently used table goes first. Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "core/batch_format.h"
#include "core/mutex.h"

namespace cohort::api {

class TableCellCache {
 public:
  using Cells = std::vector<batch::MediaRow>;
  // What a load gives: the cells, and whether they may be kept (final: the document will not
  // change under its key).
  struct Loaded {
    Cells cells;
    bool final = true;
  };

  explicit TableCellCache(size_t capacity = 64) : capacity_(capacity) {}

  // The cells under `key`, from the cache or from `load` (called without the lock held: two
  // callers may load the same table at once; both answers are the same).
  Result<std::shared_ptr<const Cells>> Get(const std::string& key,
                                           const std::function<Result<Loaded>()>& load)
      COHORT_EXCLUDES(mu_);

  size_t size() const COHORT_EXCLUDES(mu_);

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::list<std::string> order_ COHORT_GUARDED_BY(mu_);  // most recently used first
  struct Entry {
    std::shared_ptr<const Cells> cells;
    std::list<std::string>::iterator at;
  };
  std::map<std::string, Entry> entries_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::api
