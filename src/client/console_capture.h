// ConsoleCapture: captures this process's stdout and stderr (file descriptors 1 and 2) while a
// run is live. Each descriptor is replaced (dup2) by the write end of a pipe; a thread tees the
// bytes to the original descriptors, so the user still sees everything at once, and splits
// them into lines (line_splitter.h) handed to a sink with their stream and time.
//
// Stop() puts the original descriptors back. If a child process still holds a pipe (it was
// started while capturing), the thread keeps forwarding its output to the terminal until the
// child closes it, but hands no more lines to the sink.
//
// Threading: Start/Stop from any one thread at a time; the sink runs on the capture thread.
// After fork(), the child must call RestoreInChild() (from a pthread_atfork child handler):
// it points 1 and 2 back at the originals in the child and leaks the rest.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cohort/status.h"

namespace cohort::client {

class ConsoleCapture {
 public:
  using Sink = std::function<void(bool is_stderr, int64_t time_ms, std::string line)>;

  // Starts capturing fds 1 and 2. kFailedPrecondition when another capture is active in this
  // process (captures do not nest).
  static Result<std::unique_ptr<ConsoleCapture>> Start(Sink sink);
  ~ConsoleCapture();  // Stop(200)

  // Restores fds 1 and 2, then waits up to `wait_ms` for the last bytes to be split and handed
  // to the sink. No sink call happens after Stop returns. Idempotent.
  void Stop(int64_t wait_ms = 200);
  void RestoreInChild();

 private:
  struct Shared;
  explicit ConsoleCapture(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  std::shared_ptr<Shared> shared_;
  bool stopped_ = false;
};

}  // namespace cohort::client
