#include "agent/socket_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

namespace cohort::agent {
namespace {

Status Errno(const std::string& what, int err) {
  return Status::Unavailable(what + ": " + std::strerror(err));
}

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("socket path too long (" + std::to_string(path.size()) +
                                   " bytes): " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Waits for `events` on fd until the deadline (MonoMillis). OK when ready.
Status WaitFd(int fd, short events, int64_t deadline_ms) {
  while (true) {
    int64_t left = deadline_ms - MonoMillis();
    if (left < 0) left = 0;
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, int(std::min<int64_t>(left, 1 << 30)));
    if (r > 0) return Status::Ok();
    if (r == 0) return Status::DeadlineExceeded("socket: timed out");
    if (errno != EINTR) return Errno("poll", errno);
  }
}

}  // namespace

Result<int> ListenUnix(const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  // A live listener means another agent: do not steal its socket.
  auto probe = ConnectUnix(path, 200);
  if (probe.ok()) {
    close(*probe);
    return Status::AlreadyExists("an agent already listens on " + path);
  }
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket", errno);
  mode_t old = umask(0177);
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old);
  if (rc != 0 || listen(fd, 128) != 0) {
    int err = errno;
    close(fd);
    return Errno("bind/listen " + path, err);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path, int timeout_ms) {
  COHORT_ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket", errno);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    if (err == EINPROGRESS || err == EAGAIN) {
      Status w = WaitFd(fd, POLLOUT, MonoMillis() + timeout_ms);
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (w.ok()) getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (!w.ok() || soerr != 0) {
        close(fd);
        return w.ok() ? Errno("connect " + path, soerr) : w;
      }
    } else {
      close(fd);
      return Errno("connect " + path, err);
    }
  }
  return fd;
}

Status WriteAll(int fd, const char* data, size_t n, int64_t deadline_ms) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(fd, data + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += size_t(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      COHORT_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline_ms));
      continue;
    }
    return Errno("send", w < 0 ? errno : EPIPE);
  }
  return Status::Ok();
}

Result<size_t> ReadSome(int fd, char* buf, size_t n, int64_t deadline_ms) {
  while (true) {
    ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
    if (r >= 0) return size_t(r);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("recv", errno);
    COHORT_RETURN_IF_ERROR(WaitFd(fd, POLLIN, deadline_ms));
  }
}

int PeerPid(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) return 0;
  return cred.pid;
}

Status EnsurePrivateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("mkdir " + dir + ": " + ec.message());
  chmod(dir.c_str(), 0700);
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return Status::IOError("stat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) {
    return Status::PermissionDenied(dir + " is not a private directory of this user");
  }
  return Status::Ok();
}

}  // namespace cohort::agent
