// SeriesCache: the write connection's copy of the series rows' tail state (pk, TailState,
// paged_upto: the columns Ingest reads before it appends), so that a batch's series need no
// SELECT of their rows. Owned by SqliteStore, used only by the holder of its write mutex.
//
// Transactions: what a call of a group commit learns or changes goes into a layer of its own,
// merged into the group's layer when its savepoint is released (CallEnded(true)) and dropped when
// it is rolled back; the group's layer becomes the committed state when the transaction commits
// (GroupEnded(true)). A transaction that is lost (failed COMMIT, SQLite's own rollback) drops
// every entry: the cache is never ahead of, or behind, what is stored.
//
// Changes made elsewhere drop every entry, so the next batch reads the rows again:
//  - on the write connection by anything but Ingest's own statements (finishing a writer seals
//    its tails, deleting a run cascades to its series, an import): an update hook on the
//    connection sees every change of a `series` row (FK cascades included);
//  - by other connections or processes (another server, the CLI on the same file): PRAGMA
//    data_version, read after BEGIN IMMEDIATE of each group, changes when another connection
//    committed.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "series/tail.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/sqlite_group_commit.h"

namespace cohort::store::sqlite {

class SeriesCache final : public GroupCommit::Observer {
 public:
  // The stored state of one series (run, key, writer) as Ingest needs it.
  struct Entry {
    int64_t pk = 0;
    series::TailState state;
    int64_t paged_upto = 0;  // sqlite_summary_pages.h
  };
  struct Stats {
    int64_t hits = 0, misses = 0, clears = 0;
  };
  // Committed entries beyond this are dropped (all at once, rarely: 15 series of 10,000
  // writers fit).
  static constexpr size_t kMaxEntries = 1 << 18;

  SeriesCache() = default;
  ~SeriesCache() override;
  SeriesCache(const SeriesCache&) = delete;
  SeriesCache& operator=(const SeriesCache&) = delete;

  // Watches `db` (the write connection) for changes of series rows; drops every entry.
  void Attach(Db* db);

  // The entry of the series `key` of the writer `writer_pk`, or null (read the row then). Valid
  // until the next call on the cache.
  const Entry* Find(int64_t writer_pk, const std::string& key);
  // Records the state of a series as the current call read or left it.
  void Put(int64_t writer_pk, const std::string& key, const Entry& entry);

  // Ingest's own changes of series rows (its INSERT and UPDATE), which the hook lets pass, for
  // the life of this object.
  class OwnWrite {
   public:
    explicit OwnWrite(SeriesCache* cache) : cache_(cache) { ++cache_->own_; }
    ~OwnWrite() { --cache_->own_; }
    OwnWrite(const OwnWrite&) = delete;
    OwnWrite& operator=(const OwnWrite&) = delete;

   private:
    SeriesCache* cache_;
  };

  // GroupCommit::Observer
  void GroupBegan(Db* db) override;
  void CallEnded(bool kept) override;
  void GroupEnded(bool committed) override;

  void Clear();
  Stats stats() const { return stats_; }
  size_t size() const { return committed_.size(); }

 private:
  struct KeyHash {
    size_t operator()(const std::pair<int64_t, std::string>& k) const {
      return std::hash<std::string>()(k.second) * 31 + std::hash<int64_t>()(k.first);
    }
  };
  using Map = std::unordered_map<std::pair<int64_t, std::string>, Entry, KeyHash>;
  static void OnUpdate(void* self, int op, const char* db, const char* table, int64_t rowid);

  Map committed_, group_, call_;
  Db* db_ = nullptr;            // the connection hooked
  int64_t data_version_ = -1;   // PRAGMA data_version at the last GroupBegan; -1: unknown
  int own_ = 0;                 // OwnWrite guards alive
  Stats stats_;
};

}  // namespace cohort::store::sqlite
