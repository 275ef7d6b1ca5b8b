// HttpServer: HTTP/1.1 keep-alive server on Boost.Beast/Asio with C++20 coroutines.
//
// One io_context driven by `io_threads` threads accepts and parses requests (no thread per
// connection); handlers run on separate pools so that a slow store call never stalls parsing
// of other connections: GET and HEAD on `read_threads`, everything else on `worker_threads`, so
// that queries (chart loads) never queue behind writes waiting for the store. Enforces limits (body
// size, header size, connection count, idle timeout) with JSON error answers, and counts
// connections and requests for /metrics.
//
// Wire behaviour: every response carries Content-Type, Content-Length, "Server: cohort" and a
// Connection header; HEAD responses carry the GET body's Content-Length but no body. Errors the
// layer answers itself (400 malformed, 413 body, 431 headers, 503 over max_connections, 500 for a
// throwing handler) are JSON bodies as HttpResponse::Error makes them. A handler can close the
// connection after its response with a "Connection: close" header.
//
// Threading: construct, SetObserver() and Start() once from one thread; Stop() from any thread
// except a handler's (it waits for running handlers); the Router must be complete before
// Start().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "server/http/router.h"

namespace cohort::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: the OS picks a free port
  int io_threads = 2;
  // Handlers of POST, PUT, PATCH, DELETE, ... Most of them wait for the store (a group commit,
  // a pooled connection) rather than compute, so there are many: with few, heartbeats answered
  // from memory queue behind ingest, and a group commit groups at most this many batches.
  int worker_threads = 32;
  int read_threads = 2;    // handlers of GET and HEAD
  size_t max_body_bytes = 32 << 20;
  size_t max_header_bytes = 16 << 10;
  int max_connections = 20000;
  int idle_timeout_seconds = 120;    // keep-alive connections idle longer are closed
  int request_timeout_seconds = 30;  // a request must arrive whole within this
  int write_timeout_seconds = 60;    // a response must be written whole within this
};

// Counters the server keeps; read them at any time (relaxed atomics).
struct ServerStats {
  std::atomic<int64_t> connections_open{0};
  std::atomic<int64_t> connections_total{0};
  std::atomic<int64_t> connections_rejected{0};
  std::atomic<int64_t> requests_total{0};
};

// Called after each request with its route pattern (or "unmatched"), method, status and
// duration; used for /metrics. Must be thread-safe.
using RequestObserver = std::function<void(const std::string& route, const std::string& method,
                                           int status, int64_t duration_ns)>;

class HttpServer {
 public:
  HttpServer(ServerOptions options, const Router* router);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Call before Start(). Errors the layer answers itself are reported as route "unmatched".
  void SetObserver(RequestObserver observer);
  // Binds (SO_REUSEADDR) and starts serving in background threads. Returns once listening, or
  // an error (bad address: kInvalidArgument; bind/listen failed: kIOError).
  Status Start();
  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const;
  const ServerStats& stats() const;
  // Stops accepting, closes connections (idle ones at once; a running handler finishes and its
  // connection then closes), joins threads. Idempotent; a later Start() fails.
  void Stop();
  // Blocks until Stop() is called (from a signal handler thread, say).
  void Wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::http
