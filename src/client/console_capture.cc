#include "client/console_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "client/line_splitter.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/thread_signals.h"

namespace cohort::client {
namespace {

std::atomic<bool> g_active{false};

void WriteFully(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the terminal went away: drop, never block the capture
    data += w;
    n -= size_t(w);
  }
}

}  // namespace

// State shared by the capture object and its thread (which may outlive it, see header). The
// descriptors are closed by the last owner, never by the thread while Stop() may still use them
// (Stop restores fds 1 and 2 from `saved` and writes to `wake`: a descriptor closed under it
// could be reused by another thread's open() and receive that byte).
struct ConsoleCapture::Shared {
  explicit Shared(Sink s) : sink(std::move(s)) {}
  ~Shared() {
    for (int* fd : {&saved[0], &saved[1], &read[0], &read[1], &wake[0], &wake[1]}) {
      if (*fd >= 0) close(*fd);
    }
  }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

  Sink sink COHORT_GUARDED_BY(mu);  // called under mu
  int saved[2] = {-1, -1};  // original fds 1 and 2 (close-on-exec copies)
  int read[2] = {-1, -1};   // pipe read ends
  int wake[2] = {-1, -1};   // self-pipe to interrupt poll
  pid_t owner = 0;
  Mutex mu;
  bool sink_enabled COHORT_GUARDED_BY(mu) = true;
  Mutex done_mu;
  CondVar done_cv;
  bool done COHORT_GUARDED_BY(done_mu) = false;

  void Emit(bool is_stderr, std::vector<std::string>* lines) COHORT_EXCLUDES(mu) {
    if (lines->empty()) return;
    MutexLock lock(&mu);
    if (sink_enabled && sink) {
      int64_t now = NowMillis();
      for (auto& l : *lines) sink(is_stderr, now, std::move(l));
    }
    lines->clear();
  }

  void Loop() COHORT_EXCLUDES(mu, done_mu) {
    LineSplitter splitters[2];
    std::vector<std::string> lines;
    bool open[2] = {true, true};
    char buf[65536];
    while (open[0] || open[1]) {
      pollfd fds[3] = {{read[0], short(open[0] ? POLLIN : 0), 0},
                       {read[1], short(open[1] ? POLLIN : 0), 0},
                       {wake[0], POLLIN, 0}};
      int r = poll(fds, 3, 250);
      int64_t now = NowMillis();
      if (r < 0 && errno != EINTR) break;
      for (int s = 0; s < 2; ++s) {
        if (!open[s] || !(fds[s].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = ::read(read[s], buf, sizeof buf);
        if (n > 0) {
          WriteFully(saved[s], buf, size_t(n));
          splitters[s].Feed(std::string_view(buf, size_t(n)), now, &lines);
          Emit(s == 1, &lines);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open[s] = false;
          splitters[s].FlushAll(&lines);
          Emit(s == 1, &lines);
        }
      }
      if (fds[2].revents & POLLIN) {
        char c[64];
        (void)!::read(wake[0], c, sizeof c);
      }
      for (int s = 0; s < 2; ++s) {
        splitters[s].FlushIfStale(now, &lines);
        Emit(s == 1, &lines);
      }
    }
    MutexLock lock(&done_mu);
    done = true;
    done_cv.SignalAll();
  }
};

Result<std::unique_ptr<ConsoleCapture>> ConsoleCapture::Start(Sink sink) {
  bool expected = false;
  if (!g_active.compare_exchange_strong(expected, true)) {
    return Status::FailedPrecondition("console capture already active in this process");
  }
  auto sh = std::make_shared<Shared>(std::move(sink));
  sh->owner = getpid();
  auto fail = [&](const char* what) -> Status {
    for (int s = 0; s < 2; ++s) {
      if (sh->saved[s] >= 0) dup2(sh->saved[s], s + 1);
    }  // ~Shared closes the descriptors
    g_active.store(false);
    return Status::IOError(std::string("console capture: ") + what);
  };
  if (pipe2(sh->wake, O_CLOEXEC | O_NONBLOCK) != 0) return fail("pipe");
  fflush(stdout);
  fflush(stderr);
  for (int s = 0; s < 2; ++s) {
    int fd = s + 1;
    sh->saved[s] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (sh->saved[s] < 0) return fail("dup");
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return fail("pipe");
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);  // fewer stalls of the writer; best effort
    if (dup2(p[1], fd) < 0) {
      close(p[0]);
      close(p[1]);
      return fail("dup2");
    }
    close(p[1]);
    sh->read[s] = p[0];
  }
  {
    AsyncSignalsBlocked quiet;  // the host's signals go to its own threads (thread_signals.h)
    std::thread([sh] { sh->Loop(); }).detach();
  }
  return std::unique_ptr<ConsoleCapture>(new ConsoleCapture(sh));
}

ConsoleCapture::~ConsoleCapture() { Stop(); }

void ConsoleCapture::Stop(int64_t wait_ms) {
  if (stopped_) return;
  stopped_ = true;
  if (getpid() != shared_->owner) return;  // a forked child: nothing here is ours
  fflush(stdout);
  fflush(stderr);
  // Put the originals back; this closes our pipe write ends, so the thread sees EOF unless a
  // child process still holds them.
  for (int s = 0; s < 2; ++s) dup2(shared_->saved[s], s + 1);
  char c = 1;
  (void)!write(shared_->wake[1], &c, 1);
  {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    MutexLock lock(&shared_->done_mu);
    while (!shared_->done) {
      if (!shared_->done_cv.WaitUntil(shared_->done_mu, until)) break;  // waited wait_ms
    }
  }
  {
    MutexLock lock(&shared_->mu);
    shared_->sink_enabled = false;
  }
  g_active.store(false);
}

void ConsoleCapture::RestoreInChild() {
  // Async-signal-safe calls only: this runs in a pthread_atfork child handler.
  for (int s = 0; s < 2; ++s) {
    dup2(shared_->saved[s], s + 1);
    close(shared_->read[s]);
    shared_->read[s] = -1;
  }
  stopped_ = true;
  g_active.store(false);
}

}  // namespace cohort::client
