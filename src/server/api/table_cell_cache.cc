#include "server/api/table_cell_cache.h"

namespace cohort::api {

Result<std::shared_ptr<const TableCellCache::Cells>> TableCellCache::Get(
    const std::string& key, const std::function<Result<Loaded>()>& load) {
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      return it->second.cells;
    }
  }
  COHORT_ASSIGN_OR_RETURN(Loaded loaded, load());
  auto cells = std::make_shared<const Cells>(std::move(loaded.cells));
  if (!loaded.final || capacity_ == 0) return cells;
  MutexLock lock(&mu_);
  if (entries_.contains(key)) return cells;
  order_.push_front(key);
  entries_.emplace(key, Entry{cells, order_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  return cells;
}

size_t TableCellCache::size() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace cohort::api
