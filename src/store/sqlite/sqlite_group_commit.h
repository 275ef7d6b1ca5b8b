// GroupCommit: group commit of concurrent write calls on SQLite's one write connection
// (leader/follower). A call that arrives while another group's transaction is being written
// waits and is committed with the others that arrived meanwhile, in the next transaction; a call
// that finds nothing in flight starts its transaction at once (a lone call pays no extra wait).
//
// Each call's work runs in its own SAVEPOINT inside the shared transaction, so a call that fails
// (a run not found, a stream position that does not match) or that discards its work (a
// duplicate batch) rolls back only its own changes and the others still commit. Every call
// returns only after the transaction that holds its changes committed, with its own status or
// the commit's error: nothing is acknowledged before it is committed. When the transaction
// itself is lost (COMMIT fails, or SQLite rolled it back after an I/O error or a full disk), every
// call of the group gets that error and none of their changes is stored.
//
// Threading: Run() may be called from any number of threads. The leader of a group holds
// `write_mu` (the mutex that guards the write connection, also taken directly by the store's
// other write calls) while it writes the group, never with mu_ (the annotations below).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

class GroupCommit {
 public:
  // The work of one call, run on the write connection inside the group's transaction. Returns
  // true to keep its changes, false to roll them back and still succeed (e.g. a duplicate).
  using Work = std::function<Result<bool>(Db* db)>;

  // Told how each transaction and each call in it ended, by the leader, with `write_mu` held
  // (state kept beside the database that must follow its rollbacks: sqlite_series_cache.h).
  class Observer {
   public:
    virtual ~Observer() = default;
    // The group's transaction began (BEGIN IMMEDIATE succeeded), before its first call.
    virtual void GroupBegan(Db* db) = 0;
    // One call's work ended: kept (its changes stay in the transaction) or rolled back.
    virtual void CallEnded(bool kept) = 0;
    // The group ended: committed is true when every kept call's changes are committed (or
    // there were none to commit), false when the transaction was lost or never began.
    virtual void GroupEnded(bool committed) = 0;
  };

  // `write_mu` guards `*writer` (the store's write connection, which may be replaced while
  // write_mu is held). At most `max_group` calls share one transaction. `observer` (optional)
  // must outlive this.
  GroupCommit(Mutex* write_mu, std::unique_ptr<Db>* writer, size_t max_group = 256,
              Observer* observer = nullptr)
      : write_mu_(write_mu), writer_(writer), max_group_(max_group), observer_(observer) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `work` in a transaction shared with concurrent calls; returns once it committed.
  Status Run(const Work& work) COHORT_EXCLUDES(mu_, *write_mu_);

  // Counters for tests and benchmarks: transactions written and calls committed in them.
  struct Counters {
    int64_t transactions = 0;
    int64_t calls = 0;
    size_t largest_group = 0;
  };
  Counters counters() const COHORT_EXCLUDES(mu_);
  // Calls waiting for a transaction now (tests).
  size_t queued() const COHORT_EXCLUDES(mu_);

 private:
  struct Call {
    const Work* work;
    Status status;      // written by the leader of its group (while done is false)
    bool done = false;  // under mu_
  };
  // Writes one group in one transaction (the leader).
  void Commit(const std::vector<Call*>& group) COHORT_EXCLUDES(mu_, *write_mu_);
  // The body of Commit: true when the kept calls' changes are committed (or there were none).
  bool CommitGroup(Db* db, const std::vector<Call*>& group) COHORT_REQUIRES(*write_mu_);

  Mutex* const write_mu_;
  std::unique_ptr<Db>* const writer_ COHORT_PT_GUARDED_BY(*write_mu_);
  const size_t max_group_;
  Observer* const observer_;  // may be null

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Call*> queue_ COHORT_GUARDED_BY(mu_);  // calls waiting for a transaction
  bool leading_ COHORT_GUARDED_BY(mu_) = false;     // a leader is writing a group
  Counters counters_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::store::sqlite
