#include "store/sqlite/sqlite_series_cache.h"

#include <cstring>

namespace cohort::store::sqlite {

SeriesCache::~SeriesCache() {
  if (db_ != nullptr) sqlite3_update_hook(db_->raw(), nullptr, nullptr);
}

void SeriesCache::Attach(Db* db) {
  if (db_ != nullptr && db_ != db) sqlite3_update_hook(db_->raw(), nullptr, nullptr);
  db_ = db;
  data_version_ = -1;
  Clear();
  if (db_ != nullptr) {
    sqlite3_update_hook(
        db_->raw(),
        [](void* self, int op, const char* dbname, const char* table, sqlite3_int64 rowid) {
          OnUpdate(self, op, dbname, table, rowid);
        },
        this);
  }
}

void SeriesCache::OnUpdate(void* self, int /*op*/, const char* /*db*/, const char* table,
                           int64_t /*rowid*/) {
  auto* cache = static_cast<SeriesCache*>(self);
  if (cache->own_ == 0 && std::strcmp(table, "series") == 0) cache->Clear();
}

const SeriesCache::Entry* SeriesCache::Find(int64_t writer_pk, const std::string& key) {
  const std::pair<int64_t, std::string> k(writer_pk, key);
  for (const Map* m : {&call_, &group_, &committed_}) {
    if (m->empty()) continue;
    auto it = m->find(k);
    if (it != m->end()) {
      ++stats_.hits;
      return &it->second;
    }
  }
  ++stats_.misses;
  return nullptr;
}

void SeriesCache::Put(int64_t writer_pk, const std::string& key, const Entry& entry) {
  call_[{writer_pk, key}] = entry;
}

void SeriesCache::GroupBegan(Db* db) {
  if (db != db_) Attach(db);
  // Another connection's commit (another process on the file) may have changed any row.
  int64_t version = -1;
  if (Result<Stmt> st = db->Cached("PRAGMA data_version"); st.ok()) {
    Result<bool> row = st->Step();
    if (row.ok() && *row) version = st->Int(0);
  }
  if (version == -1 || version != data_version_) Clear();
  data_version_ = version;
}

void SeriesCache::CallEnded(bool kept) {
  if (kept) {
    for (auto& [k, e] : call_) group_[k] = e;
  }
  call_.clear();
}

void SeriesCache::GroupEnded(bool committed) {
  call_.clear();
  if (!committed) {
    Clear();
    return;
  }
  if (committed_.size() + group_.size() > kMaxEntries) committed_.clear();
  for (auto& [k, e] : group_) committed_[k] = e;
  group_.clear();
}

void SeriesCache::Clear() {
  ++stats_.clears;
  committed_.clear();
  group_.clear();
  call_.clear();
}

}  // namespace cohort::store::sqlite
