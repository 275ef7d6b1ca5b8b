#include "store/postgres/pg_pool.h"

#include <random>
#include <thread>

namespace cohort::store::pg {

Pool::Lease::~Lease() {
  if (pool_ == nullptr) return;
  pool_->Return(std::move(conn_));
}

Pool::Pool(ConnInfo info, int max_size, std::chrono::milliseconds acquire_timeout)
    : info_(std::move(info)),
      max_size_(max_size < 1 ? 1 : max_size),
      acquire_timeout_(acquire_timeout) {}

Pool::~Pool() = default;

int Pool::open() const {
  MutexLock lock(&mu_);
  return open_;
}

Result<Pool::Lease> Pool::Acquire() {
  {
    MutexLock lock(&mu_);
    const auto deadline = std::chrono::steady_clock::now() + acquire_timeout_;
    while (idle_.empty() && open_ >= max_size_) {
      if (!returned_.WaitUntil(mu_, deadline)) break;  // timed out: check once more below
    }
    const bool got = !idle_.empty() || open_ < max_size_;
    if (!got) {
      return Status::Unavailable(
          "postgres: all " + std::to_string(max_size_) + " pooled connections stayed busy for " +
          std::to_string(acquire_timeout_.count()) + " ms (raise pool_size in the store URL)");
    }
    if (!idle_.empty()) {
      std::unique_ptr<Conn> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(conn));
    }
    ++open_;  // reserve a slot, connect outside the lock
  }
  Result<std::unique_ptr<Conn>> conn = Conn::Connect(info_);
  if (!conn.ok()) {
    MutexLock lock(&mu_);
    --open_;
    returned_.Signal();
    return conn.status();
  }
  return Lease(this, std::move(conn).value());
}

void Pool::Return(std::unique_ptr<Conn> conn) {
  if (conn != nullptr && (conn->broken() || conn->in_transaction())) conn.reset();
  MutexLock lock(&mu_);
  if (conn != nullptr) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
  returned_.Signal();
}

namespace internal {

const char* BeginSql(TxnMode mode) {
  return mode == TxnMode::kRead ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
                                : "BEGIN ISOLATION LEVEL READ COMMITTED";
}

void Rollback(Conn* conn) { (void)conn->ExecScript("ROLLBACK"); }

void BackoffBeforeRetry(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int max_ms = 2 << std::min(attempt, 6);  // 4, 8, 16, ... ms
  std::this_thread::sleep_for(std::chrono::microseconds(
      std::uniform_int_distribution<int>(max_ms * 250, max_ms * 1000)(rng)));
}

}  // namespace internal
}  // namespace cohort::store::pg
