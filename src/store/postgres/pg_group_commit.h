// GroupCommit: group commit of concurrent ingest batches on PostgreSQL (leader/follower, the
// idea of sqlite_group_commit.h). A batch that arrives while `max_in_flight` group transactions
// are being written waits and is written with the others that arrived meanwhile, in the next
// transaction: one COMMIT (one WAL flush) for all of them. A batch that finds a slot free starts
// its transaction at once, so a lone batch pays no extra wait.
//
// A member is a batch's statements in two parts: `lock` statements that lock (and read) the rows
// the batch was planned from, and `write` statements (which check the plan against those rows
// and write nothing when it is stale, pg_ingest.cc). The group goes out as one pipeline (one
// round trip):
//   BEGIN; every member's lock statements, by lock_order; every member's write statements, by
//   (write_order, lock_order); COMMIT
// so that row locks are always taken in one global order (writers by pk, then runs by pk: the
// store's writer -> series -> run order) and two groups, or a group and a single call, cannot
// deadlock. Members with the same `key` (one writer) never share a group: the later one waits
// for the next.
//
// Failures. When a member's own statement fails with an SQL error, nothing of the group has
// committed: the transaction is rolled back, that member is answered kRefused with the error
// (nothing of it is stored; the caller may take another path) and the rest of the group is
// written again without it, so one bad batch does not fail the others. When the transaction as a
// whole fails (COMMIT fails, the connection is lost), every member not refused before is answered
// kFailed with that error: none of them is acknowledged. A member is answered kCommitted only
// after COMMIT returned, i.e. with the commit durable as the server's synchronous_commit says.
//
// Threading: Run() may be called from any number of threads; it blocks until the member's
// transaction is over. Leaders borrow one pooled connection per group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_pool.h"

namespace cohort::store::pg {

class GroupCommit {
 public:
  // One batch's statements; the Params they point to must outlive Run().
  struct Member {
    std::vector<Conn::Statement> lock;
    std::vector<Conn::Statement> write;
    int64_t lock_order = 0;   // the writer's pk
    int64_t write_order = 0;  // the run's pk
    std::string key;          // members with equal keys never share a transaction
  };
  enum class Outcome {
    kCommitted,  // stored and committed
    kRefused,    // one of its statements failed: nothing of it stored, the group went on
    kFailed,     // the group's transaction failed (whether it committed may be unknown when
                 // the connection was lost after COMMIT was sent)
  };
  struct Answer {
    Outcome outcome = Outcome::kFailed;
    Status status;                  // the error unless kCommitted
    std::vector<PgResult> results;  // kCommitted: of the member's lock, then write statements
  };

  // At most `max_in_flight` (>= 1) group transactions at once, of at most `max_group` members.
  GroupCommit(Pool* pool, int max_in_flight, size_t max_group = 64)
      : pool_(pool), max_in_flight_(max_in_flight < 1 ? 1 : max_in_flight), max_group_(max_group) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Writes `member` in a transaction shared with concurrent members; returns when it is over.
  Answer Run(const Member& member) COHORT_EXCLUDES(mu_);

  // Counters for tests and benchmarks.
  struct Counters {
    int64_t transactions = 0;  // group transactions committed
    int64_t committed = 0;     // members committed in them
    int64_t refused = 0;       // members refused (their own statement failed)
    int64_t failed = 0;        // members of groups whose transaction failed
    size_t largest_group = 0;  // most members committed in one transaction
  };
  Counters counters() const COHORT_EXCLUDES(mu_);
  // Members waiting for a transaction now (tests).
  size_t queued() const COHORT_EXCLUDES(mu_);

 private:
  // taken and done are guarded by mu_; answer is filled by the leader of the call's group.
  struct Call {
    const Member* member;
    Answer answer;
    bool taken = false;  // in a group being written
    bool done = false;
    CondVar wake;  // done, or may lead (waited on with mu_)
  };
  // Writes one group (the leader); fills every call's answer.
  void Write(std::vector<Call*> group) COHORT_EXCLUDES(mu_);

  Pool* const pool_;
  const int max_in_flight_;
  const size_t max_group_;

  mutable Mutex mu_;                                // also guards every queued Call
  std::deque<Call*> queue_ COHORT_GUARDED_BY(mu_);  // calls waiting for a transaction
  int leading_ COHORT_GUARDED_BY(mu_) = 0;          // groups being written
  Counters counters_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::store::pg
