// FakeAgent: a stand-in for the cohort agent on a real Unix socket, for the client's tests (the
// agent protocol is our seam). Its thread accepts connections one after another, at most
// `max_connections` of them, answers hello at once and hands every other frame to the test's
// handler, which answers with Reply() and may hang up. Header-only; tests only.
//
// Threading: the handler runs on the fake's thread. The destructor stops that thread (a handler
// that sleeps should use SleepUnlessStopped) and joins it; declare a FakeAgent after the members
// its handler uses, so that it goes first.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "agent/protocol.h"
#include "agent/socket_io.h"

namespace cohort::client {

class FakeAgent {
 public:
  // One accepted connection, as the handler sees it.
  struct Connection {
    int index = 0;  // 0 for the first connection
    int fd = -1;
    bool hang_up = false;  // set by the handler: close the connection after this frame
  };
  using Handler = std::function<void(Connection* conn, const agent::Frame& frame)>;

  struct Options {
    int max_connections = INT_MAX;
    int64_t read_poll_ms = 100;  // how often a blocked read looks whether the fake stops
  };

  FakeAgent(const std::string& socket, Handler handler, Options options)
      : handler_(std::move(handler)), options_(options) {
    auto fd = agent::ListenUnix(socket);
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    listen_fd_ = fd.ok() ? *fd : -1;
    thread_ = std::thread([this] { Serve(); });
  }
  FakeAgent(const std::string& socket, Handler handler)
      : FakeAgent(socket, std::move(handler), Options()) {}
  ~FakeAgent() {
    stop_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
  }
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  // Writes one frame (1 s deadline); errors are the client's to notice.
  static void Reply(int fd, agent::MessageType type, std::string_view payload) {
    std::string out;
    agent::AppendFrame(type, payload, &out);
    (void)agent::WriteAll(fd, out.data(), out.size(), agent::MonoMillis() + 1000);
  }

  // Sleeps `ms`, or until the fake is being stopped.
  void SleepUnlessStopped(int64_t ms) const {
    for (int64_t until = agent::MonoMillis() + ms; !stop_ && agent::MonoMillis() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  void Serve() {
    for (int index = 0; !stop_ && index < options_.max_connections; ++index) {
      Connection conn;
      conn.index = index;
      conn.fd = accept(listen_fd_, nullptr, nullptr);
      if (conn.fd < 0) return;
      ServeConnection(&conn);
      close(conn.fd);
    }
  }

  void ServeConnection(Connection* conn) {
    agent::FrameDecoder decoder;
    char buf[4096];
    while (!stop_) {
      auto n =
          agent::ReadSome(conn->fd, buf, sizeof buf, agent::MonoMillis() + options_.read_poll_ms);
      if (!n.ok() && n.status().code() == StatusCode::kDeadlineExceeded) continue;
      if (!n.ok() || *n == 0) return;
      decoder.Feed(buf, *n);
      agent::Frame f;
      while (true) {
        auto got = decoder.Next(&f);
        if (!got.ok() || !*got) break;
        if (f.type == agent::MessageType::kHello) {
          agent::HelloMessage hello;
          hello.pid = getpid();
          Reply(conn->fd, agent::MessageType::kHelloReply, agent::ToJson(hello));
        } else {
          handler_(conn, f);
          if (conn->hang_up) return;
        }
      }
    }
  }

  const Handler handler_;
  const Options options_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cohort::client
