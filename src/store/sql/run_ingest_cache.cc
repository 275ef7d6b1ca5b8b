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

std::optional<int64_t> RunIngestCache::MediaBytes(int64_t run_pk) const {
  MutexLock lock(&mu_);
  auto it = runs_.find(run_pk);
  return it == runs_.end() ? std::nullopt : it->second.media_bytes;
}

int64_t RunIngestCache::LoadMediaBytes(int64_t run_pk, int64_t loaded) {
  MutexLock lock(&mu_);
  RunEntry& e = Entry(run_pk);
  if (!e.media_bytes) {
    e.media_bytes = loaded;
    e.loaded = ++loads_;
  }
  return *e.media_bytes;
}

void RunIngestCache::AddMediaBytes(int64_t run_pk, int64_t delta, Note* note) {
  MutexLock lock(&mu_);
  auto it = runs_.find(run_pk);
  if (it == runs_.end() || !it->second.media_bytes) return;
  if (note->media && note->loaded != it->second.loaded) return;  // not the total it moved before
  *it->second.media_bytes += delta;
  note->media = note->media.value_or(0) + delta;
  note->loaded = it->second.loaded;
}

void RunIngestCache::Settle(Note* note, bool committed) {
  if (note->run_pk != 0) {
    MutexLock lock(&mu_);
    if (committed && !note->keys.empty()) {
      RunEntry& e = Entry(note->run_pk);
      for (auto& [key, type] : note->keys) e.keys.emplace(std::move(key), std::move(type));
    } else if (!committed && note->media) {
      auto it = runs_.find(note->run_pk);
      if (it != runs_.end() && it->second.media_bytes && it->second.loaded == note->loaded) {
        *it->second.media_bytes -= *note->media;
      }
    }
  }
  *note = Note{};
}

void RunIngestCache::Forget(int64_t run_pk) {
  MutexLock lock(&mu_);
  runs_.erase(run_pk);
}

void RunIngestCache::Clear() {
  MutexLock lock(&mu_);
  runs_.clear();
}

}  // namespace cohort::store
