// SigtermWatcher: turns SIGTERM into a call of `on_sigterm` on an ordinary thread (where taking
// locks and doing I/O is allowed), then gives the signal back to whatever handled it before:
// the previous disposition is restored and SIGTERM is raised again, so that with the default
// disposition the process still dies of SIGTERM (its parent sees WTERMSIG == SIGTERM), and a
// handler the program had installed still runs.
//
// The signal handler itself only writes a byte to a pipe (async-signal-safe). A process that
// forked after Install() has no watcher thread: there the handler restores the previous
// disposition and re-raises at once, unless Install() is called again in that process (the
// client library does, when a forked child first uses its run: run.cc StartForkedChild).
//
// Threading: Install() is thread-safe and idempotent per process; `on_sigterm` runs on the
// watcher thread, at most once per process.
#pragma once

#include <functional>

namespace cohort::client {

class SigtermWatcher {
 public:
  // Installs the handler (once per process image) and starts the watcher thread (once per
  // process id). A SIGTERM disposition of SIG_IGN is left alone: nothing is installed.
  static void Install(std::function<void()> on_sigterm);
};

}  // namespace cohort::client
