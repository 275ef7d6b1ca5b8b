// Fuzz target: HTTP request handling end to end. The input is the raw byte stream of one client
// connection (one or more pipelined requests), sent over a real loopback socket to a real
// ServerApp (HTTP parser, router, every API and compat handler, a SQLite store in a temporary
// directory) running in this process. "@KEY@" in the input is replaced by the server's admin
// key and "@BASIC@" by "api:<key>" in base64 (the compat routes' Basic auth), so that seeds
// reach the authenticated handlers.
//
// Properties: nothing crashes (ASan/UBSan abort the process); the server answers and closes
// the connection within a deadline after the client finished sending (no hang, no lost
// connection); no answer is a 500 (an internal error is a bug: bad input must get a 4xx); and
// the server keeps accepting connections.
//
// The server is started once per process and shared by all inputs (state accumulates, as it
// would on a real server). Threading: libFuzzer calls the target from one thread; the server
// runs on its own threads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "server/server_app.h"

namespace {

constexpr int kDeadlineMs = 20000;  // generous: sanitized builds on a loaded machine

struct Fixture {
  std::string dir;
  std::unique_ptr<cohort::server::ServerApp> app;
  uint16_t port = 0;
  std::string key;
};

Fixture* g_fixture = nullptr;

void StopServer() {
  if (g_fixture == nullptr) return;
  g_fixture->app->Stop();
  g_fixture->app.reset();
  std::error_code ec;
  std::filesystem::remove_all(g_fixture->dir, ec);
}

Fixture* StartServer() {
  auto* f = new Fixture;
  std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  if (const char* t = std::getenv("TMPDIR")) base = t;
  std::string templ = base + "/cohort-http-fuzz-XXXXXX";
  FUZZ_CHECK(mkdtemp(templ.data()) != nullptr, "mkdtemp %s: %s", templ.c_str(),
             std::strerror(errno));
  f->dir = templ;
  cohort::server::ServerConfig config;
  config.data_dir = f->dir;
  config.entity = "fuzz";
  config.write_user_config = false;
  config.sweep_interval_s = 1;
  config.http.io_threads = 1;
  config.http.worker_threads = 2;
  // Small limits, so that inputs of fuzzer size reach them.
  config.http.max_header_bytes = 4 << 10;
  config.http.max_body_bytes = 256 << 10;
  config.http.request_timeout_seconds = 5;
  config.http.max_connections = 256;
  config.limits.max_keys_per_batch = 64;
  f->app = std::make_unique<cohort::server::ServerApp>(std::move(config));
  cohort::Status s = f->app->Start();
  FUZZ_CHECK(s.ok(), "server start: %s", s.ToString().c_str());
  f->key = f->app->bootstrap_key();
  std::string url = f->app->url();
  f->port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  g_fixture = f;
  std::atexit(StopServer);
  return f;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= uint32_t(uint8_t(in[i + 2]));
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? kAlphabet[v & 63] : '=');
  }
  return out;
}

std::string Replace(std::string_view in, std::string_view from, const std::string& to) {
  std::string out;
  out.reserve(in.size() + 64);
  while (true) {
    size_t at = in.find(from);
    out.append(in.substr(0, at));
    if (at == std::string_view::npos) return out;
    out.append(to);
    in.remove_prefix(at + from.size());
  }
}

std::string Substitute(std::string_view in, const std::string& key) {
  return Replace(Replace(in, "@KEY@", key), "@BASIC@", Base64("api:" + key));
}

int64_t MillisLeft(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                               std::chrono::steady_clock::now())
      .count();
}

// Sends `request` on a fresh connection, half-closes it and reads everything the server
// answers until it closes the connection.
std::string Exchange(uint16_t port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0, "socket: %s", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
             "the server no longer accepts connections: %s", std::strerror(errno));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDeadlineMs);
  std::string response;
  char buf[16384];
  size_t sent = 0;
  bool write_closed = false;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (!write_closed) p.events |= POLLOUT;
    int64_t left = MillisLeft(deadline);
    FUZZ_CHECK(left > 0, "no complete answer within %d ms (%zu of %zu bytes sent, %zu received)",
               kDeadlineMs, sent, request.size(), response.size());
    int n = poll(&p, 1, static_cast<int>(left));
    if (n <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = recv(fd, buf, sizeof buf, 0);
      if (got <= 0) break;  // closed (or reset): the exchange is over
      response.append(buf, static_cast<size_t>(got));
    }
    if (!write_closed && (p.revents & POLLOUT)) {
      if (sent < request.size()) {
        ssize_t w = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (w < 0) {
          write_closed = true;  // the server closed early (an error answer): read the rest
        } else {
          sent += static_cast<size_t>(w);
        }
      }
      if (sent == request.size() && !write_closed) {
        shutdown(fd, SHUT_WR);
        write_closed = true;
      }
    }
  }
  close(fd);
  return response;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = StartServer();
  std::string request =
      Substitute(std::string_view(reinterpret_cast<const char*>(data), size), fixture->key);
  std::string response = Exchange(fixture->port, request);
  static const bool verbose = std::getenv("FUZZ_HTTP_VERBOSE") != nullptr;
  if (verbose) {  // the status lines, to see what a seed reaches
    for (size_t at = response.find("HTTP/1."); at != std::string::npos;
         at = response.find("HTTP/1.", at + 1)) {
      std::fprintf(stderr, "  %s\n", response.substr(at, response.find('\r', at) - at).c_str());
    }
  }
  if (!response.empty()) {
    FUZZ_CHECK(response.rfind("HTTP/1.", 0) == 0, "the answer does not start with a status line");
  }
  // Walk the answers one by one (status line, headers, Content-Length body): a body may quote
  // the request (an error naming an unknown field), so "HTTP/1.1 500" inside it is no status.
  for (size_t at = 0; at < response.size();) {
    const size_t head_end = response.find("\r\n\r\n", at);
    if (response.compare(at, 7, "HTTP/1.") != 0 || head_end == std::string::npos) break;
    FUZZ_CHECK(response.compare(at + 8, 5, " 500 ") != 0,
               "an internal error answered bad input:\n%s", response.substr(at, 600).c_str());
    size_t length = 0;
    const size_t cl = response.find("\r\nContent-Length: ", at);
    if (cl != std::string::npos && cl < head_end) {
      length = std::strtoul(response.c_str() + cl + 18, nullptr, 10);
    }
    at = head_end + 4 + length;
  }
  return 0;
}
