#include "store/postgres/pg_ingest_cache.h"

namespace cohort::store::pg {

std::string IngestCache::Key(const RunRef& ref, const std::string& label) {
  std::string key;
  key.reserve(ref.entity.size() + ref.project.size() + ref.run_id.size() + label.size() + 3);
  for (const std::string* part : {&ref.entity, &ref.project, &ref.run_id}) {
    key += *part;
    key.push_back('\0');  // no part holds a NUL: it cannot be stored as PostgreSQL text
  }
  key += label;
  return key;
}

std::shared_ptr<const IngestCache::Writer> IngestCache::Get(const std::string& key) const {
  MutexLock lock(&mu_);
  auto it = writers_.find(key);
  return it == writers_.end() ? nullptr : it->second;
}

void IngestCache::Put(const std::string& key, std::shared_ptr<const Writer> writer) {
  MutexLock lock(&mu_);
  if (writers_.size() >= kMaxWriters && !writers_.contains(key)) writers_.clear();
  writers_[key] = std::move(writer);
}

void IngestCache::Erase(const std::string& key) {
  MutexLock lock(&mu_);
  writers_.erase(key);
}

void IngestCache::EraseWriter(int64_t writer_pk) {
  MutexLock lock(&mu_);
  std::erase_if(writers_, [&](const auto& entry) { return entry.second->writer_pk == writer_pk; });
}

}  // namespace cohort::store::pg
