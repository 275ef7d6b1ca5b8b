// FakeHttpServer: a tiny HTTP/1.1 server on 127.0.0.1:<ephemeral port> for tests of the Sender
// and the client library. It parses requests (Content-Length bodies, keep-alive), records them
// and answers with whatever the test's handler returns.
//
// Threading: one accept thread plus one thread per connection; requests() and the handler are
// guarded by mu_ (the handler runs under it, so it may touch test state freely).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace cohort::agent::testing {

struct FakeRequest {
  std::string method;
  std::string path;
  std::string authorization;
  std::string content_type;
  std::string batch_seq;      // the Cohort-Batch-Seq header
  std::string batch_ordered;  // the Cohort-Batch-Ordered header
  std::string body;
  int64_t time_ms = 0;
};

struct FakeResponse {
  int status = 200;
  std::string body = "{}";
  std::vector<std::pair<std::string, std::string>> headers;
};

class FakeHttpServer {
 public:
  using Handler = std::function<FakeResponse(const FakeRequest&)>;

  // `port` 0: an ephemeral port.
  explicit FakeHttpServer(Handler handler, int port = 0) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(uint16_t(port));
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listen_fd_, 64);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeHttpServer() {
    stop_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    close(listen_fd_);
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      for (int fd : conn_fds_) shutdown(fd, SHUT_RDWR);
      threads.swap(conn_threads_);
    }
    for (auto& t : threads) t.join();
  }

  // A port that was free a moment ago (for a server that starts later).
  static int FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    close(fd);
    return ntohs(addr.sin_port);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  std::vector<FakeRequest> requests() const {
    MutexLock lock(&mu_);
    return requests_;
  }
  size_t connections() const {
    MutexLock lock(&mu_);
    return conn_threads_.size();
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      MutexLock lock(&mu_);
      conn_fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void Serve(int fd) {
    std::string buf;
    char chunk[65536];
    while (!stop_) {
      size_t header_end;
      while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n <= 0) {
          close(fd);
          return;
        }
        buf.append(chunk, size_t(n));
      }
      FakeRequest req;
      std::string head = buf.substr(0, header_end);
      size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
      req.method = head.substr(0, sp1);
      req.path = head.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t content_length = 0;
      size_t pos = head.find("\r\n");
      while (pos != std::string::npos && pos < head.size()) {
        size_t next = head.find("\r\n", pos + 2);
        std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos
                                                                          : next - pos - 2);
        std::string lower = line;
        for (char& c : lower) c = char(tolower(c));
        if (lower.rfind("content-length:", 0) == 0) content_length = std::stoul(line.substr(15));
        if (lower.rfind("authorization:", 0) == 0) req.authorization = line.substr(15);
        if (lower.rfind("content-type:", 0) == 0) req.content_type = line.substr(14);
        if (lower.rfind("cohort-batch-seq:", 0) == 0) req.batch_seq = line.substr(18);
        if (lower.rfind("cohort-batch-ordered:", 0) == 0) req.batch_ordered = line.substr(22);
        pos = next;
      }
      size_t body_start = header_end + 4;
      while (buf.size() < body_start + content_length) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n <= 0) {
          close(fd);
          return;
        }
        buf.append(chunk, size_t(n));
      }
      req.body = buf.substr(body_start, content_length);
      buf.erase(0, body_start + content_length);
      req.time_ms = Now();
      FakeResponse resp;
      {
        MutexLock lock(&mu_);
        requests_.push_back(req);
        resp = handler_(req);
      }
      std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\n";
      out += "Content-Type: application/json\r\nContent-Length: " +
             std::to_string(resp.body.size()) + "\r\n";
      for (auto& [k, v] : resp.headers) out += k + ": " + v + "\r\n";
      out += "\r\n" + resp.body;
      size_t off = 0;
      while (off < out.size()) {
        ssize_t n = write(fd, out.data() + off, out.size() - off);
        if (n <= 0) {
          close(fd);
          return;
        }
        off += size_t(n);
      }
    }
    close(fd);
  }

  Handler handler_ COHORT_GUARDED_BY(mu_);  // called under mu_
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  mutable Mutex mu_;
  std::vector<FakeRequest> requests_ COHORT_GUARDED_BY(mu_);
  std::vector<int> conn_fds_ COHORT_GUARDED_BY(mu_);
  std::vector<std::thread> conn_threads_ COHORT_GUARDED_BY(mu_);
};

}  // namespace cohort::agent::testing
