// Unix-socket plumbing shared by the agent and the client library: listen, connect, and reads
// and writes that never wait past a deadline (a dead or stuck peer can never hang a training
// process). Descriptors are created close-on-exec; writes use MSG_NOSIGNAL (no SIGPIPE).
// Free functions; thread-safe (callers own their descriptors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cohort/status.h"

namespace cohort::agent {

// Binds and listens on `path` (replacing a stale socket file), mode 0600. kAlreadyExists when
// another process is listening there.
Result<int> ListenUnix(const std::string& path);
// Connects to `path`. kUnavailable when nobody listens (or the file is missing).
Result<int> ConnectUnix(const std::string& path, int timeout_ms);

// Writes all of `data` unless the deadline (NowMillis clock) passes first (kDeadlineExceeded)
// or the peer is gone (kUnavailable).
Status WriteAll(int fd, const char* data, size_t n, int64_t deadline_ms);
// Reads what is available, waiting until the deadline for at least one byte. Returns the byte
// count, 0 at end of stream; kDeadlineExceeded when nothing came; kUnavailable on errors.
Result<size_t> ReadSome(int fd, char* buf, size_t n, int64_t deadline_ms);

// mkdir -p with mode 0700, then checks that `dir` belongs to this user and is not accessible to
// others (kPermissionDenied otherwise).
Status EnsurePrivateDir(const std::string& dir);

}  // namespace cohort::agent
