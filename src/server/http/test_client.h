// TestClient: a blocking HTTP/1.1 client over a raw loopback socket, for the HTTP layer's tests
// (server_test.cc, server_stream_test.cc). Header-only, test code only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cohort::http {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A blocking HTTP/1.1 client over a raw loopback socket, for tests. Reads time out after 5 s so
// that a broken server fails a test instead of hanging it.
class TestClient {
 public:
  explicit TestClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~TestClient() { ::close(fd_); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response; nullopt on EOF, reset or timeout. `head`: the response has no body.
  // Interim (1xx) responses are skipped unless `interim`.
  std::optional<ClientResponse> Read(bool head = false, bool interim = false) {
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    ClientResponse resp;
    std::string header = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    size_t line_end = header.find("\r\n");
    std::string status_line = header.substr(0, line_end);
    if (status_line.size() < 12) return std::nullopt;
    resp.status = std::stoi(status_line.substr(9, 3));
    size_t pos = line_end == std::string::npos ? header.size() : line_end + 2;
    while (pos < header.size()) {
      size_t next = header.find("\r\n", pos);
      if (next == std::string::npos) next = header.size();
      std::string line = header.substr(pos, next - pos);
      size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t value_start = line.find_first_not_of(' ', colon + 1);
      resp.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
      pos = next + 2;
    }
    if (resp.status / 100 == 1) return interim ? std::optional(resp) : Read(head, interim);
    size_t length =
        head ? 0
             : std::stoul(resp.Header("content-length").empty() ? "0"
                                                                : resp.Header("content-length"));
    while (buffer_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    resp.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return resp;
  }

  std::optional<ClientResponse> Get(const std::string& target) {
    if (!Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) return std::nullopt;
    return Read();
  }

  // True when the server closes the connection (EOF or reset) within `timeout`.
  bool WaitClosed(milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      int left = static_cast<int>(
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
      if (::poll(&p, 1, std::max(left, 0)) <= 0) return false;
      char c[4096];
      ssize_t n = ::recv(fd_, c, sizeof(c), 0);
      if (n <= 0) return true;
    }
    return false;
  }

  // True when the connection is closed right now (pending bytes are discarded).
  bool IsClosedNow() { return WaitClosed(milliseconds(1)); }

 private:
  bool Fill() {
    char chunk[16384];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

}  // namespace cohort::http
