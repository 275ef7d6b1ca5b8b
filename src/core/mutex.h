// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with clang's
// thread-safety annotations, so that the lock rules are checked by the compiler instead of kept
// in comments. Every class that holds a lock declares it as a `Mutex` and marks what it guards:
//
//   class Queue {
//     void Push(int v) COHORT_EXCLUDES(mu_) { MutexLock lock(&mu_); items_.push_back(v); }
//     void PushLocked(int v) COHORT_REQUIRES(mu_);
//     Mutex mu_;
//     std::vector<int> items_ COHORT_GUARDED_BY(mu_);
//   };
//
// scripts/check-thread-safety.sh compiles every source with clang's -Wthread-safety as errors
// (a suite of scripts/test.sh, so CI runs it); under GCC the annotations are empty. Waits on a
// CondVar are written as `while (!ready_) cv_.Wait(mu_);`: a predicate lambda would be checked
// as a function of its own that holds no lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define COHORT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define COHORT_THREAD_ANNOTATION(x)
#endif

#define COHORT_CAPABILITY(x) COHORT_THREAD_ANNOTATION(capability(x))
#define COHORT_SCOPED_CAPABILITY COHORT_THREAD_ANNOTATION(scoped_lockable)
#define COHORT_GUARDED_BY(x) COHORT_THREAD_ANNOTATION(guarded_by(x))
#define COHORT_PT_GUARDED_BY(x) COHORT_THREAD_ANNOTATION(pt_guarded_by(x))
#define COHORT_ACQUIRED_BEFORE(...) COHORT_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define COHORT_ACQUIRED_AFTER(...) COHORT_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define COHORT_REQUIRES(...) COHORT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define COHORT_ACQUIRE(...) COHORT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define COHORT_RELEASE(...) COHORT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define COHORT_TRY_ACQUIRE(...) COHORT_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define COHORT_EXCLUDES(...) COHORT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define COHORT_ASSERT_HELD(x) COHORT_THREAD_ANNOTATION(assert_capability(x))
#define COHORT_RETURN_CAPABILITY(x) COHORT_THREAD_ANNOTATION(lock_returned(x))
#define COHORT_NO_THREAD_SAFETY_ANALYSIS COHORT_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace cohort {

class CondVar;

class COHORT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() COHORT_ACQUIRE() { mu_.lock(); }
  void Unlock() COHORT_RELEASE() { mu_.unlock(); }
  bool TryLock() COHORT_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds the lock (where it cannot see it, e.g. a callback
  // that runs under it); checks nothing at run time.
  void AssertHeld() const COHORT_ASSERT_HELD(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock() and Lock() release and retake it inside the scope (the
// destructor releases it only when held).
class COHORT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) COHORT_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() COHORT_RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() COHORT_RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() COHORT_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A condition variable waited on with a held Mutex. Wait* release the mutex while blocked and
// hold it again when they return (spurious wake-ups included: callers loop on their condition).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex& mu) COHORT_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False when the deadline passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
      COHORT_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  // False when the time ran out.
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout) COHORT_REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace cohort
