// scripts/check-thread-safety.sh compiles this first and must see it refused: it reads a member
// guarded by a Mutex without holding it, so an analysis that lets it pass checks nothing.
#include "core/mutex.h"

class Counter {
 public:
  int Read() { return value_; }  // the finding: value_ is read without mu_
  void Add() {
    cohort::MutexLock lock(&mu_);
    ++value_;
  }

 private:
  cohort::Mutex mu_;
  int value_ COHORT_GUARDED_BY(mu_) = 0;
};

int main() {
  Counter c;
  c.Add();
  return c.Read();
}
