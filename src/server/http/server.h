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
// Request bodies: a body of known length of at least kGatedBodyBytes, and every chunked body, is
// read only after the body gate (SetBodyGate) accepted the request's head, before any body byte
// is read and before "100 Continue" is sent: a client without credentials cannot make the server
// hold memory for a body it announces. Such a body's buffer grows as its bytes arrive (never
// allocated and filled up front), and its declared length is reserved from a budget of
// `max_body_bytes_in_flight` shared by all connections: beyond it, 503 with Retry-After.
//
// Streamed bodies: a route registered with RouteOptions::stream_body gets its body through
// HttpRequest::body_reader, read from the socket as the handler asks (after the gate, in chunks
// of kBodyChunkBytes, "100 Continue" sent at the first read), so max_body_bytes does not apply
// and only the route's streamed_body_memory_bytes is reserved from the in-flight budget. The
// length must be known (a chunked body gets 411); each read waits at most
// request_timeout_seconds; a cut connection is an error of BodyReader::Next and is not answered.
// A handler that answers before reading the whole body has its connection closed after the
// answer. Responses may be streamed too (HttpResponse::body_source: a large download), each
// holding one piece's share of max_response_bytes_in_flight while it is sent.
//
// Threading: construct, SetObserver(), SetBodyGate() and Start() once from one thread; Stop() from
// any thread except a handler's (it waits for running handlers); the Router must be complete before
// Start().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
  int worker_threads = 256;  // docs/reliability.md, "--worker-threads default 32 → 256"
  int read_threads = 2;      // handlers of GET and HEAD
  size_t max_body_bytes = 32 << 20;
  // Bodies of known length being received or handled, all connections together (declared
  // lengths of bodies of at least kGatedBodyBytes).
  size_t max_body_bytes_in_flight = size_t{256} << 20;
  // Streamed responses (downloads) being sent, all connections together: each holds one piece
  // (HttpResponse::streamed_piece_bytes) from before its head until its body went; past this a
  // new one waits a few seconds, then is answered 503 with Retry-After.
  size_t max_response_bytes_in_flight = size_t{256} << 20;
  int response_admission_wait_ms = 5000;  // a streamed response's wait for its share
  size_t max_header_bytes = 16 << 10;
  int max_connections = 20000;
  int idle_timeout_seconds = 120;    // keep-alive connections idle longer are closed
  int request_timeout_seconds = 30;  // a request must arrive whole within this
  int write_timeout_seconds = 60;    // a response must be written whole within this
};

// Bodies at least this large (and every chunked body) pass the body gate before they are read.
inline constexpr size_t kGatedBodyBytes = 16 << 10;

// Counters the server keeps; read them at any time (relaxed atomics).
struct ServerStats {
  std::atomic<int64_t> connections_open{0};
  std::atomic<int64_t> connections_total{0};
  std::atomic<int64_t> connections_rejected{0};
  std::atomic<int64_t> requests_total{0};
  std::atomic<int64_t> body_bytes_in_flight{0};  // reserved by bodies being received or handled
  std::atomic<int64_t> bodies_refused_total{0};  // refused by the gate or the in-flight budget
  std::atomic<int64_t> response_bytes_in_flight{0};  // shares of streamed responses being sent
  std::atomic<int64_t> responses_refused_total{0};   // streamed responses answered 503 instead
};

// Decides, from a request's head (method, target, path, query, headers, remote address; no
// body), whether its body may be read: nullopt accepts it, a response refuses it (it is sent and
// the connection closed). Runs on the handler pool of the request's method. Must be thread-safe.
using BodyGate = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;

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
  // Call before Start(). Without a gate every body is read.
  void SetBodyGate(BodyGate gate);
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
