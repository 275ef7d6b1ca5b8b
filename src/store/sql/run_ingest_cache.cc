#include "store/sql/run_ingest_cache.h"

namespace cohort::store {

RunIngestCache::RunEntry& RunIngestCache::Entry(int64_t run_pk) {
  if (runs_.size() >= kMaxRuns && !runs_.contains(run_pk)) runs_.clear();
  return runs_[run_pk];
}

std::vector<std::string> RunIngestCache::UnknownKeys(int64_t run_pk,
                                                     const std::vector<std::string>& keys) const {
  MutexLock lock(&mu_);
  auto it = runs_.find(run_pk);
  if (it == runs_.end()) return keys;
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    if (!it->second.keys.contains(k)) out.push_back(k);
  }
  return out;
}

std::map<std::string, std::string> RunIngestCache::KnownTypes(
    int64_t run_pk, const std::vector<std::string>& keys) const {
  MutexLock lock(&mu_);
  std::map<std::string, std::string> out;
  auto it = runs_.find(run_pk);
  if (it == runs_.end()) return out;
  for (const std::string& k : keys) {
    if (auto known = it->second.keys.find(k); known != it->second.keys.end()) {
      out.emplace(k, known->second);
    }
  }
  return out;
}

void RunIngestCache::Begin(Note* note, int64_t run_pk) const {
  MutexLock lock(&mu_);
  note->run_pk = run_pk;
  note->forgets = forgets_;
}

void RunIngestCache::Settle(Note* note, bool committed) {
  if (note->run_pk != 0 && committed && !note->keys.empty()) {
    MutexLock lock(&mu_);
    if (note->forgets == forgets_) {
      RunEntry& e = Entry(note->run_pk);
      for (auto& [key, type] : note->keys) e.keys.emplace(std::move(key), std::move(type));
    }
  }
  *note = Note{};
}

void RunIngestCache::Forget(int64_t run_pk) {
  MutexLock lock(&mu_);
  runs_.erase(run_pk);
  ++forgets_;
}

void RunIngestCache::Clear() {
  MutexLock lock(&mu_);
  runs_.clear();
  ++forgets_;
}

}  // namespace cohort::store
