// A bounded pool of PostgreSQL connections, and the transaction runner every store call goes
// through.
//
// Threading: Pool is thread-safe. Acquire() hands a connection to one caller (a Lease) until the
// Lease goes away; with max_size connections lent, callers wait up to acquire_timeout for one to
// come back. Connections are opened lazily; a broken connection or one returned inside a
// transaction is closed rather than reused.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "store/postgres/pg_conn.h"

namespace cohort::store::pg {

class Pool {
 public:
  // A connection lent by the pool; returned when the Lease goes away.
  class Lease {
   public:
    Lease(Pool* pool, std::unique_ptr<Conn> conn) : pool_(pool), conn_(std::move(conn)) {}
    ~Lease();
    Lease(Lease&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), conn_(std::move(o.conn_)) {}
    Lease& operator=(Lease&&) = delete;
    Conn* operator->() { return conn_.get(); }
    Conn* get() { return conn_.get(); }
    // Closes the connection instead of returning it (after a failure that may have left state).
    void Discard() { conn_.reset(); }

   private:
    Pool* pool_;
    std::unique_ptr<Conn> conn_;
  };

  Pool(ConnInfo info, int max_size, std::chrono::milliseconds acquire_timeout);
  ~Pool();

  // An idle connection, a new one while fewer than max_size are open, or the first one returned
  // within acquire_timeout. kUnavailable when none comes or connecting fails.
  Result<Lease> Acquire() COHORT_EXCLUDES(mu_);

  int max_size() const { return max_size_; }
  // Connections open now (lent and idle).
  int open() const COHORT_EXCLUDES(mu_);

 private:
  void Return(std::unique_ptr<Conn> conn) COHORT_EXCLUDES(mu_);

  const ConnInfo info_;
  const int max_size_;
  const std::chrono::milliseconds acquire_timeout_;
  mutable Mutex mu_;
  CondVar returned_;
  std::vector<std::unique_ptr<Conn>> idle_ COHORT_GUARDED_BY(mu_);
  int open_ COHORT_GUARDED_BY(mu_) = 0;  // lent + idle + being opened
};

// What a call does on its connection: kAutocommit runs statements one by one (single-statement
// reads); kRead wraps them in a read-only REPEATABLE READ transaction (one consistent snapshot);
// kWrite in a READ COMMITTED read-write transaction.
enum class TxnMode { kAutocommit, kRead, kWrite };

// Transactions retried after a deadlock or serialization failure (then the error is returned).
inline constexpr int kMaxTxnAttempts = 5;

namespace internal {
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}
const char* BeginSql(TxnMode mode);
void Rollback(Conn* conn);
// Sleeps a little before retry `attempt` (1, 2, ...), randomised so that peers spread out.
void BackoffBeforeRetry(int attempt);
}  // namespace internal

// Runs fn(Conn*) -> Status or Result<T> in a transaction of `mode` on a pooled connection,
// committing when fn succeeds and rolling back when it fails, so that a failed call changes
// nothing. The BEGIN travels with fn's first statement (Conn::DeferBegin); fn may commit with
// its last one (Conn::ExecAndCommit). Runs fn again (up to kMaxTxnAttempts times) after a
// deadlock or serialization failure, and after the connection failed before COMMIT was sent
// (e.g. a backend that restarted while its connection sat idle in the pool): such a
// transaction cannot have committed. kAutocommit calls (reads) are run again after any
// connection failure.
template <typename Fn>
auto RunTransaction(Pool* pool, TxnMode mode, Fn&& fn) -> std::invoke_result_t<Fn&, Conn*> {
  using R = std::invoke_result_t<Fn&, Conn*>;
  for (int attempt = 1;; ++attempt) {
    Result<Pool::Lease> lease = pool->Acquire();
    if (!lease.ok()) return R(lease.status());
    Conn* conn = lease->get();
    if (mode != TxnMode::kAutocommit) conn->DeferBegin(internal::BeginSql(mode));
    R result = fn(conn);
    Status status = internal::StatusOf(result);
    if (status.ok() && mode != TxnMode::kAutocommit) status = conn->Commit();
    if (status.ok()) return result;
    conn->DropDeferredBegin();
    const bool retry = IsRetryableSqlState(conn->last_sqlstate()) ||
                       (conn->broken() && (mode == TxnMode::kAutocommit || !conn->commit_sent()));
    if (conn->broken()) {
      lease->Discard();
    } else if (conn->in_transaction()) {
      internal::Rollback(conn);
      if (conn->broken() || conn->in_transaction()) lease->Discard();
    }
    if (!retry || attempt >= kMaxTxnAttempts) {
      if (internal::StatusOf(result).ok()) return R(status);  // the commit failed
      return result;
    }
    internal::BackoffBeforeRetry(attempt);
  }
}

}  // namespace cohort::store::pg
