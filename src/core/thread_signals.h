// Threads that a library starts inside its host's process block the asynchronous signals
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM) so that the kernel hands a signal
// sent to the process to one of the program's own threads, where its handlers expect it. CPython
// runs Python-level handlers on its main thread only, and a SIGTERM the kernel delivered to a
// library thread leaves a main thread asleep in time.sleep() unwoken until the sleep ends (a
// test saw a SIGTERM'd training process live on for the rest of its 60 s sleep).
//
//   { AsyncSignalsBlocked quiet; worker = std::thread(...); }  // the thread inherits the mask
//
// The creating thread's mask is restored when the guard ends. Header-only; thread-safe (per
// thread state).
#pragma once

#include <pthread.h>
#include <signal.h>

namespace cohort {

// The asynchronous signals, the one list (the Python package's threads block these too:
// cohort._cohort.ASYNC_SIGNALS).
inline constexpr int kAsyncSignals[] = {SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGALRM};

class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kAsyncSignals) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~AsyncSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace cohort
