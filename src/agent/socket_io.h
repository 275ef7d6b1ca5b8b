// Unix-socket plumbing shared by the agent and the client library: listen, connect, and reads
// and writes that never wait past a deadline (a dead or stuck peer can never hang a training
// process). Deadlines are on the monotonic clock (MonoMillis), so that a wall clock set forward
// or back (NTP, a resumed VM, a user) never cuts a wait short or stretches it. Descriptors are
// created close-on-exec; writes use MSG_NOSIGNAL (no SIGPIPE).
// Free functions; thread-safe (callers own their descriptors).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cohort/status.h"

namespace cohort::agent {

// Monotonic milliseconds (steady_clock): the clock of every deadline here and in the client's
// transports (client/transport.h).
inline int64_t MonoMillis() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Binds and listens on `path` (replacing a stale socket file), mode 0600. kAlreadyExists when
// another process is listening there.
Result<int> ListenUnix(const std::string& path);
// Connects to `path`. kUnavailable when nobody listens (or the file is missing).
Result<int> ConnectUnix(const std::string& path, int timeout_ms);

// Writes all of `data` unless the deadline (MonoMillis clock) passes first (kDeadlineExceeded)
// or the peer is gone (kUnavailable).
Status WriteAll(int fd, const char* data, size_t n, int64_t deadline_ms);
// Reads what is available, waiting until the deadline (MonoMillis) for at least one byte. Returns
// the byte count, 0 at end of stream; kDeadlineExceeded when nothing came; kUnavailable on errors.
Result<size_t> ReadSome(int fd, char* buf, size_t n, int64_t deadline_ms);

// The pid of the process at the other end of a Unix socket (SO_PEERCRED, as this process's pid
// namespace sees it); 0 when unknown.
int PeerPid(int fd);

// mkdir -p with mode 0700, then checks that `dir` belongs to this user and is not accessible to
// others (kPermissionDenied otherwise).
Status EnsurePrivateDir(const std::string& dir);

}  // namespace cohort::agent
