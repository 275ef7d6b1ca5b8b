#include "client/sigterm_watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "core/mutex.h"
#include "core/thread_signals.h"

namespace cohort::client {
namespace {

// State shared with the signal handler: plain globals and lock-free atomics only.
struct sigaction g_previous;
std::atomic<bool> g_installed{false};
std::atomic<int> g_watcher_pid{0};
std::atomic<int> g_write_fd{-1};

// In the handler: raised on the handling thread, pending until the handler returns (SIGTERM is
// blocked inside it). On the watcher thread, which blocks SIGTERM (thread_signals.h): sent to
// the process, so that one of the program's threads takes it.
void GiveBackSignal(bool from_watcher = false) {
  sigaction(SIGTERM, &g_previous, nullptr);
  if (from_watcher) {
    kill(getpid(), SIGTERM);
  } else {
    raise(SIGTERM);
  }
}

void OnSigterm(int) {
  const int saved = errno;
  const int fd = g_write_fd.load();
  if (fd >= 0 && g_watcher_pid.load() == getpid()) {
    const char c = 1;
    if (write(fd, &c, 1) != 1) GiveBackSignal();
  } else {
    GiveBackSignal();
  }
  errno = saved;
}

Mutex& InstallMutex() {
  static auto* mu = new Mutex();
  return *mu;
}

}  // namespace

void SigtermWatcher::Install(std::function<void()> on_sigterm) {
  MutexLock lock(&InstallMutex());
  if (!g_installed.load()) {
    struct sigaction current;
    if (sigaction(SIGTERM, nullptr, &current) != 0) return;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) return;
    g_previous = current;
    struct sigaction mine = {};
    mine.sa_handler = OnSigterm;
    sigemptyset(&mine.sa_mask);
    mine.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &mine, nullptr) != 0) return;
    g_installed.store(true);
  }
  if (g_watcher_pid.load() == getpid()) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  const int old_write = g_write_fd.exchange(fds[1]);
  (void)old_write;  // a forked parent's pipe: its watcher lives in the parent, leave it open
  AsyncSignalsBlocked quiet;  // SIGTERM itself reaches the program's threads, not this one
  std::thread([read_fd = fds[0], on_sigterm = std::move(on_sigterm)] {
    char c;
    while (true) {
      ssize_t n = read(read_fd, &c, 1);
      if (n == 1) break;
      if (n < 0 && errno == EINTR) continue;
      return;  // the pipe is gone: nothing to watch
    }
    on_sigterm();
    GiveBackSignal(/*from_watcher=*/true);
  }).detach();
  g_watcher_pid.store(getpid());
}

}  // namespace cohort::client
