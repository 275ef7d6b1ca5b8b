// HttpServer on Boost.Beast: with connection.{h,cc} and beast_message.{h,cc}, the only code of the
// HTTP layer that includes Beast and Asio. One coroutine per connection runs on that connection's
// strand of the io_context; route handlers run on a separate thread pool and the coroutine resumes
// on its strand afterwards.
#include "server/http/server.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "server/http/beast_message.h"
#include "server/http/connection.h"

namespace cohort::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

using internal::BeastRequest;
using internal::BeastResponse;
using internal::BodiesInFlightRefusal;
using internal::BodyReservation;
using internal::Connection;
using internal::HasTransferEncoding;
using internal::LogError;
using internal::ParseTarget;
using internal::ReadErrorResponse;
using internal::SocketBodyReader;
using internal::ToBeast;
using internal::ToLower;
using internal::WantsClose;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr size_t kFirstReadBytes = 512;                // buffer for the first byte of a request
constexpr size_t kKeepBufferBytes = 8 << 10;           // larger idle buffers are released
constexpr size_t kBodyReadBytes = 256 << 10;           // a large body grows by this much per read
constexpr uint64_t kChunkedReserveStep = 256 << 10;    // a chunked body's reservation grows so
constexpr auto kLingerTime = std::chrono::seconds(1);  // draining after an early error answer
constexpr size_t kLingerMaxBytes = 4 << 20;
constexpr std::chrono::milliseconds kAcceptBackoff{50};
// How often a streamed response waiting for its share of --max-response-bytes-in-flight looks.
constexpr std::chrono::milliseconds kStreamedPieceRetry{10};
// Why binding to or listening on `where` failed; a port that another process holds says what to
// do about it.
Status ListenError(const std::string& op, const std::string& where, const beast::error_code& ec) {
  if (ec == asio::error::address_in_use) {
    return Status::IOError(op + " " + where +
                           ": address already in use: is another server on this port? choose "
                           "another with --port (or --port 0 for any free one)");
  }
  return Status::IOError(op + " " + where + ": " + ec.message());
}

}  // namespace

struct HttpServer::Impl {
  Impl(ServerOptions opts, const Router* r)
      : options(std::move(opts)),
        router(r),
        workers(static_cast<size_t>(std::max(1, options.worker_threads))),
        readers(static_cast<size_t>(std::max(1, options.read_threads))),
        ioc(std::max(1, options.io_threads)),
        acceptor(asio::make_strand(ioc)) {}

  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(std::shared_ptr<Connection> conn, bool reject);
  asio::awaitable<HttpResponse> RunHandler(HttpRequest* req);
  asio::awaitable<std::optional<HttpResponse>> RunGate(const HttpRequest* head);
  asio::awaitable<void> LingerAndClose(Connection& conn);
  // Answers a request whose body is not read (or not read further), then closes.
  asio::awaitable<void> RefuseBody(Connection& conn, HttpResponse refusal, unsigned version,
                                   const std::string& method);
  // Reads a chunked body, growing `reservation` to what arrived (in kChunkedReserveStep steps,
  // up to --max-body-bytes); `*out_of_budget` when the budget had no room for more.
  asio::awaitable<beast::error_code> ReadChunkedBody(
      beast::tcp_stream& stream, beast::flat_buffer& buffer,
      bhttp::request_parser<bhttp::string_body>& parser, BodyReservation& reservation,
      bool* out_of_budget);
  // Writes a response; a streamed body (HttpResponse::body_source) piece by piece, each made on
  // the read pool. An error when the response could not be written whole. `*sent_status` is the
  // status that went: the response's, or 503 when a streamed body found no room in the budget.
  asio::awaitable<beast::error_code> WriteResponse(Connection& conn, HttpResponse&& resp,
                                                   unsigned version, bool head, bool keep_alive,
                                                   int* sent_status);
  // Runs the handler of a streamed body (RouteOptions::stream_body) and answers. False when the
  // connection is done with (closed, or to be closed by the caller's return).
  asio::awaitable<bool> ServeStreamed(const std::shared_ptr<Connection>& conn,
                                      beast::flat_buffer& buffer,
                                      bhttp::request_parser<bhttp::string_body>& parser,
                                      HttpRequest& req, BodyReservation& reservation);
  void Spawn(std::shared_ptr<Connection> conn, bool reject);
  void Unregister(uint64_t id, bool counted) COHORT_EXCLUDES(conns_mu);
  void CloseAll() COHORT_EXCLUDES(conns_mu);

  const ServerOptions options;
  const Router* const router;
  RequestObserver observer;
  BodyGate body_gate;
  ServerStats stats;
  uint16_t port = 0;
  std::atomic<bool> stopping{false};

  // Never held across a co_await (a coroutine may resume on another thread).
  Mutex conns_mu;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> conns COHORT_GUARDED_BY(conns_mu);
  uint64_t next_conn_id COHORT_GUARDED_BY(conns_mu) = 0;

  Mutex stop_mu COHORT_ACQUIRED_BEFORE(conns_mu);  // serializes Start/Stop
  CondVar stopped_cv;
  bool started COHORT_GUARDED_BY(stop_mu) = false;
  bool stopped COHORT_GUARDED_BY(stop_mu) = false;

  // Destroyed in reverse order: the acceptor before the io_context, and pending coroutine
  // frames (owned by the io_context) while the members above are still alive.
  asio::thread_pool workers;
  asio::thread_pool readers;
  asio::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> io_threads COHORT_GUARDED_BY(stop_mu);
};

void HttpServer::Impl::Spawn(std::shared_ptr<Connection> conn, bool reject) {
  auto executor = conn->stream.get_executor();
  asio::co_spawn(executor, Session(std::move(conn), reject), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      LogError(std::string("connection failed: ") + ex.what());
    } catch (...) {
      LogError("connection failed with an unknown exception");
    }
  });
}

asio::awaitable<void> HttpServer::Impl::AcceptLoop() {
  asio::steady_timer backoff(acceptor.get_executor());
  while (true) {
    tcp::socket socket(asio::make_strand(ioc));
    auto [ec] = co_await acceptor.async_accept(socket, kUseTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open() || stopping) co_return;
      LogError("accept failed: " + ec.message());  // EMFILE and friends: wait, then retry
      backoff.expires_after(kAcceptBackoff);
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    stats.connections_total.fetch_add(1, std::memory_order_relaxed);
    int64_t open = stats.connections_open.fetch_add(1, std::memory_order_relaxed) + 1;
    bool reject = open > options.max_connections;
    if (reject) {
      stats.connections_open.fetch_sub(1, std::memory_order_relaxed);
      stats.connections_rejected.fetch_add(1, std::memory_order_relaxed);
    }
    Spawn(std::make_shared<Connection>(std::move(socket)), reject);
  }
}

void HttpServer::Impl::Unregister(uint64_t id, bool counted) {
  {
    MutexLock lock(&conns_mu);
    conns.erase(id);
  }
  if (counted) stats.connections_open.fetch_sub(1, std::memory_order_relaxed);
}

asio::awaitable<HttpResponse> HttpServer::Impl::RunHandler(HttpRequest* req) {
  if (stopping) co_return HttpResponse::Error(503, "unavailable", "server is shutting down");
  try {
    co_return router->Dispatch(*req);
  } catch (const std::exception& e) {
    LogError("handler for " + req->method + " " + req->path + " threw: " + e.what());
  } catch (...) {
    LogError("handler for " + req->method + " " + req->path + " threw a non-exception");
  }
  co_return HttpResponse::Error(500, "internal", "internal server error");
}

asio::awaitable<std::optional<HttpResponse>> HttpServer::Impl::RunGate(const HttpRequest* head) {
  if (stopping) co_return HttpResponse::Error(503, "unavailable", "server is shutting down");
  try {
    co_return body_gate(*head);
  } catch (const std::exception& e) {
    LogError("body gate for " + head->method + " " + head->path + " threw: " + e.what());
  } catch (...) {
    LogError("body gate for " + head->method + " " + head->path + " threw a non-exception");
  }
  co_return HttpResponse::Error(500, "internal", "internal server error");
}

asio::awaitable<void> HttpServer::Impl::LingerAndClose(Connection& conn) {
  // Half-close and drain what the client still sends, so that closing with unread data does
  // not reset the connection before the client has read our answer.
  beast::error_code ignored;
  conn.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  conn.stream.expires_after(kLingerTime);
  char sink[4096];
  size_t drained = 0;
  while (drained < kLingerMaxBytes) {
    auto [ec, n] = co_await conn.stream.async_read_some(asio::buffer(sink), kUseTuple);
    if (ec) break;
    drained += n;
  }
  conn.Close();
}

asio::awaitable<void> HttpServer::Impl::RefuseBody(Connection& conn, HttpResponse refusal,
                                                   unsigned version, const std::string& method) {
  stats.bodies_refused_total.fetch_add(1, std::memory_order_relaxed);
  stats.requests_total.fetch_add(1, std::memory_order_relaxed);
  const int status = refusal.status;
  BeastResponse res = ToBeast(std::move(refusal), version, false, false);
  conn.stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
  auto [wec, wn] = co_await bhttp::async_write(conn.stream, res, kUseTuple);
  if (observer) observer("unmatched", method, status, 0);
  if (!wec) co_await LingerAndClose(conn);
}

asio::awaitable<beast::error_code> HttpServer::Impl::ReadChunkedBody(
    beast::tcp_stream& stream, beast::flat_buffer& buffer,
    bhttp::request_parser<bhttp::string_body>& parser, BodyReservation& reservation,
    bool* out_of_budget) {
  *out_of_budget = false;
  while (!parser.is_done()) {
    auto [ec, n] = co_await bhttp::async_read_some(stream, buffer, parser, kUseTuple);
    if (ec) co_return ec;
    const uint64_t have = parser.get().body().size();
    if (have <= reservation.bytes()) continue;
    const uint64_t steps = (have + kChunkedReserveStep - 1) / kChunkedReserveStep;
    const uint64_t want = std::min<uint64_t>(steps * kChunkedReserveStep, options.max_body_bytes);
    if (!reservation.GrowTo(std::max(want, have), options.max_body_bytes_in_flight)) {
      *out_of_budget = true;
      co_return beast::error_code();
    }
  }
  co_return beast::error_code();
}

asio::awaitable<beast::error_code> HttpServer::Impl::WriteResponse(Connection& conn,
                                                                   HttpResponse&& resp,
                                                                   unsigned version, bool head,
                                                                   bool keep_alive,
                                                                   int* sent_status) {
  *sent_status = resp.status;
  std::function<Result<std::string>()> source = std::move(resp.body_source);
  const uint64_t length = resp.streamed_length;
  const uint64_t piece_bytes =
      resp.streamed_piece_bytes == 0 ? length : std::min(length, resp.streamed_piece_bytes);
  const bool bodiless = resp.status < 200 || resp.status == 204 || resp.status == 304;
  // A streamed body's share of --max-response-bytes-in-flight (one piece), taken before its
  // head goes and held until its body went: a download never waits once it started; past the
  // budget one waits up to response_admission_wait_ms, then is answered 503 (nothing sent yet).
  BodyReservation share(&stats.response_bytes_in_flight);
  if (source && !head && !bodiless) {
    const uint64_t want = std::min<uint64_t>(piece_bytes, options.max_response_bytes_in_flight);
    const auto give_up = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(options.response_admission_wait_ms);
    asio::steady_timer wait(conn.stream.get_executor());
    while (!share.Take(want, options.max_response_bytes_in_flight)) {
      if (stopping.load() || std::chrono::steady_clock::now() >= give_up) {
        stats.responses_refused_total.fetch_add(1, std::memory_order_relaxed);
        HttpResponse busy = HttpResponse::Error(
            503, "unavailable",
            "the server is sending as many downloads as --max-response-bytes-in-flight allows; "
            "retry shortly");
        busy.headers.emplace_back("Retry-After", "1");
        *sent_status = busy.status;
        BeastResponse refused = ToBeast(std::move(busy), version, false, keep_alive);
        conn.stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
        auto [wec, wn] = co_await bhttp::async_write(conn.stream, refused, kUseTuple);
        co_return wec;
      }
      wait.expires_after(kStreamedPieceRetry);
      co_await wait.async_wait(kUseTuple);
    }
  }
  BeastResponse res = ToBeast(std::move(resp), version, head || source != nullptr, keep_alive);
  if (source && !bodiless) res.content_length(length);
  if (bodiless) source = nullptr;
  conn.stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
  if (!source || head) {
    auto [wec, wn] = co_await bhttp::async_write(conn.stream, res, kUseTuple);
    co_return wec;
  }
  bhttp::response_serializer<bhttp::string_body> serializer(res);
  auto [hec, hn] = co_await bhttp::async_write_header(conn.stream, serializer, kUseTuple);
  if (hec) co_return hec;
  uint64_t sent = 0;
  while (sent < length) {
    Status made;
    std::string piece;
    auto make = [&]() -> asio::awaitable<void> {
      Result<std::string> next = source();
      if (next.ok()) {
        piece = std::move(next).value();
      } else {
        made = next.status();
      }
      co_return;
    };
    co_await asio::co_spawn(readers.get_executor(), make(), asio::use_awaitable);
    if (!made.ok() || piece.empty() || piece.size() > length - sent) {
      LogError("streamed response body ended early: " +
               (made.ok() ? std::string("a piece of the wrong size") : made.ToString()));
      co_return beast::error_code(asio::error::broken_pipe);
    }
    conn.stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
    auto [wec, wn] =
        co_await asio::async_write(conn.stream, asio::buffer(piece.data(), piece.size()),
                                   kUseTuple);
    if (wec) co_return wec;
    sent += piece.size();
  }
  co_return beast::error_code();
}

asio::awaitable<bool> HttpServer::Impl::ServeStreamed(
    const std::shared_ptr<Connection>& conn, beast::flat_buffer& buffer,
    bhttp::request_parser<bhttp::string_body>& parser, HttpRequest& req,
    BodyReservation& reservation) {
  const auto& head = parser.get();
  const bool keep_alive_asked = head.keep_alive();
  const unsigned version = head.version();
  // A request without Content-Length (and not chunked: refused before) has no body.
  const uint64_t length = parser.is_done() ? 0 : parser.content_length().value_or(0);
  const size_t arrived_bytes = static_cast<size_t>(std::min<uint64_t>(buffer.size(), length));
  const bool expect_continue =
      arrived_bytes < length && beast::iequals(head[bhttp::field::expect], "100-continue");
  std::string arrived(arrived_bytes, '\0');
  asio::buffer_copy(asio::buffer(arrived.data(), arrived.size()), buffer.data());
  buffer.consume(arrived_bytes);
  SocketBodyReader reader(conn, length, std::move(arrived), expect_continue,
                          std::chrono::seconds(options.request_timeout_seconds));
  req.body_reader = &reader;
  const auto started_at = std::chrono::steady_clock::now();
  conn->stream.expires_never();
  HttpResponse resp =
      co_await asio::co_spawn(workers.get_executor(), RunHandler(&req), asio::use_awaitable);
  req.body_reader = nullptr;
  reservation.Release();
  stats.requests_total.fetch_add(1, std::memory_order_relaxed);
  const std::string route = req.route.empty() ? std::string("unmatched") : req.route;
  auto observe = [&](int status) {
    if (!observer) return;
    observer(route, req.method, status,
             std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now() - started_at)
                 .count());
  };
  if (reader.failed()) {
    // The body was cut (closed, timed out, stopping): nobody is left to answer.
    observe(resp.status);
    conn->Close();
    co_return false;
  }
  const bool complete = reader.complete();
  const bool keep_alive = keep_alive_asked && complete && !stopping && !WantsClose(resp);
  int status = resp.status;
  beast::error_code wec =
      co_await WriteResponse(*conn, std::move(resp), version, false, keep_alive, &status);
  observe(status);
  if (wec) co_return false;
  if (!complete) {
    // Answered before the whole body was read (a refusal): the rest is not read.
    co_await LingerAndClose(*conn);
    co_return false;
  }
  if (!keep_alive) {
    conn->Close();
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> HttpServer::Impl::Session(std::shared_ptr<Connection> conn, bool reject) {
  uint64_t id;
  {
    MutexLock lock(&conns_mu);
    id = next_conn_id++;
    conns.emplace(id, conn);
  }
  // Unregisters however the coroutine ends, including destruction of its frame.
  struct Guard {
    Impl* impl;
    uint64_t id;
    bool counted;
    ~Guard() { impl->Unregister(id, counted); }
  } guard{this, id, !reject};
  if (stopping) {
    conn->Close();
    co_return;
  }
  beast::tcp_stream& stream = conn->stream;
  beast::error_code ec;
  std::string remote = stream.socket().remote_endpoint(ec).address().to_string();
  if (ec) remote.clear();

  if (reject) {
    HttpResponse busy = HttpResponse::Error(503, "unavailable", "too many connections");
    busy.headers.emplace_back("Retry-After", "1");
    BeastResponse res = ToBeast(std::move(busy), 11, false, false);
    stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
    auto [wec, wn] = co_await bhttp::async_write(stream, res, kUseTuple);
    if (!wec) co_await LingerAndClose(*conn);
    co_return;
  }

  beast::flat_buffer buffer;
  bool first = true;
  while (!stopping) {
    if (!first && buffer.size() == 0) {
      // Idle keep-alive wait: only the idle timeout applies until the next request begins.
      if (buffer.capacity() > kKeepBufferBytes) buffer.shrink_to_fit();
      stream.expires_after(std::chrono::seconds(options.idle_timeout_seconds));
      auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kFirstReadBytes), kUseTuple);
      if (rec) co_return;
      buffer.commit(n);
    }
    first = false;
    stream.expires_after(std::chrono::seconds(options.request_timeout_seconds));

    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(
        std::min<size_t>(options.max_header_bytes, std::numeric_limits<uint32_t>::max())));
    // No limit while the head is read: whether --max-body-bytes applies depends on the route
    // (a streamed body has none), known once the head is.
    parser.body_limit(boost::none);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kUseTuple);
    ec = hec;
    // The request's head, for the body gate and then the handler.
    HttpRequest req;
    bool target_ok = false;
    if (!ec) {
      const auto& head = parser.get();
      req.method = std::string(head.method_string());
      req.target = std::string(head.target());
      req.remote_address = remote;
      req.headers.reserve(std::distance(head.begin(), head.end()));
      for (const auto& field : head) {
        req.headers.emplace_back(ToLower(field.name_string()), std::string(field.value()));
      }
      target_ok = ParseTarget(&req);
    }
    const RouteOptions* route_options = !ec && target_ok ? router->Options(req) : nullptr;
    const bool streamed = route_options != nullptr && route_options->stream_body;
    if (!ec && !streamed) {
      parser.body_limit(static_cast<uint64_t>(options.max_body_bytes));  // checked as it is read
      if (parser.content_length() && *parser.content_length() > options.max_body_bytes) {
        ec = bhttp::error::body_limit;  // answered 413 below, before a byte of it is read
      }
    }
    const bool gated = !ec && !parser.is_done() &&
                       (parser.chunked() || !parser.content_length() ||
                        *parser.content_length() >= kGatedBodyBytes);
    BodyReservation reservation(&stats.body_bytes_in_flight);
    std::optional<HttpResponse> refused;
    if (!ec && !parser.chunked() && HasTransferEncoding(req)) {
      // A coding other than chunked last (RFC 9112 6.1): its length cannot be known; framing
      // it by a Content-Length beside it is what request smuggling through a proxy relies on.
      refused = HttpResponse::Error(400, "bad_request",
                                    "Transfer-Encoding: only chunked bodies are read");
    } else if (gated && !target_ok) {
      refused = HttpResponse::Error(400, "bad_request", "malformed request target");
    } else if (gated && body_gate) {
      const bool read_pool =
          parser.get().method() == bhttp::verb::get || parser.get().method() == bhttp::verb::head;
      refused = co_await asio::co_spawn(read_pool ? readers.get_executor() : workers.get_executor(),
                                        RunGate(&req), asio::use_awaitable);
    }
    if (!ec && streamed && !refused && !parser.is_done() && !parser.content_length()) {
      refused = HttpResponse::Error(411, "length_required",
                                    "this route needs the body's length: send Content-Length, "
                                    "not a chunked body");
    }
    // A streamed body holds at most the route's buffer in memory, not its length; a chunked
    // body (no length said) reserves what arrived as it grows (ReadChunkedBody).
    const uint64_t reserve =
        streamed && parser.content_length()
            ? std::min<uint64_t>(*parser.content_length(),
                                 route_options->streamed_body_memory_bytes + kBodyChunkBytes)
            : parser.content_length().value_or(
                  std::min<uint64_t>(options.max_body_bytes, kChunkedReserveStep));
    if (gated && !refused && !reservation.Take(reserve, options.max_body_bytes_in_flight)) {
      refused = BodiesInFlightRefusal();
    }
    if (refused) {
      // Refused before a byte of its body was read: answer, then close (the body is not read).
      co_await RefuseBody(*conn, std::move(*refused), parser.get().version(), req.method);
      co_return;
    }
    if (streamed && !ec) {
      if (!co_await ServeStreamed(conn, buffer, parser, req, reservation)) co_return;
      continue;
    }
    if (!ec && !parser.is_done() &&
        beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      auto [cec, cn] = co_await asio::async_write(
          stream, asio::buffer(kContinue.data(), kContinue.size()), kUseTuple);
      ec = cec;
    }
    // A large body of known length is read straight into its final string (no parser pass over
    // the bytes), which grows as the bytes arrive: its capacity is reserved (address space, not
    // memory) but only what was received is ever written. Anything else (chunked, small) goes
    // through the parser.
    std::string direct_body;
    bool direct = false;
    if (!ec && !parser.is_done() && !parser.chunked() && parser.content_length() &&
        *parser.content_length() >= kGatedBodyBytes) {
      const size_t length = static_cast<size_t>(*parser.content_length());
      direct_body.reserve(length);
      size_t have = std::min(buffer.size(), length);
      direct_body.resize(have);
      asio::buffer_copy(asio::buffer(direct_body.data(), have), buffer.data());
      buffer.consume(have);
      while (have < length) {
        direct_body.resize(std::min(length, have + kBodyReadBytes));
        auto [bec, bn] = co_await stream.async_read_some(
            asio::buffer(direct_body.data() + have, direct_body.size() - have), kUseTuple);
        if (bec) {
          ec = bec;
          break;
        }
        have += bn;
      }
      direct_body.resize(have);
      direct = true;
    } else if (!ec && !parser.is_done() && parser.chunked()) {
      bool out_of_budget = false;
      ec = co_await ReadChunkedBody(stream, buffer, parser, reservation, &out_of_budget);
      if (out_of_budget) {
        co_await RefuseBody(*conn, BodiesInFlightRefusal(), parser.get().version(), req.method);
        co_return;
      }
    } else if (!ec && !parser.is_done()) {
      auto [bec, bn] = co_await bhttp::async_read(stream, buffer, parser, kUseTuple);
      ec = bec;
    }
    auto started_at = std::chrono::steady_clock::now();
    if (ec) {
      HttpResponse error = ReadErrorResponse(ec);
      if (error.status == 0) co_return;
      int status = error.status;
      stats.requests_total.fetch_add(1, std::memory_order_relaxed);
      BeastResponse res = ToBeast(std::move(error), 11, false, false);
      stream.expires_after(std::chrono::seconds(options.write_timeout_seconds));
      auto [wec, wn] = co_await bhttp::async_write(stream, res, kUseTuple);
      if (observer) {
        std::string method =
            parser.is_header_done() ? std::string(parser.get().method_string()) : std::string();
        observer("unmatched", method, status, 0);
      }
      if (!wec) co_await LingerAndClose(*conn);
      co_return;
    }

    BeastRequest breq = parser.release();
    req.body = direct ? std::move(direct_body) : std::move(breq.body());
    bool head = breq.method() == bhttp::verb::head;
    bool keep_alive = breq.keep_alive();
    unsigned version = breq.version();

    HttpResponse resp;
    if (!target_ok) {
      resp = HttpResponse::Error(400, "bad_request", "malformed request target");
    } else {
      stream.expires_never();
      auto pool = head || breq.method() == bhttp::verb::get ? readers.get_executor()
                                                            : workers.get_executor();
      resp = co_await asio::co_spawn(pool, RunHandler(&req), asio::use_awaitable);
    }
    std::string().swap(req.body);  // the body is done with: free it and its reservation
    reservation.Release();
    stats.requests_total.fetch_add(1, std::memory_order_relaxed);
    keep_alive = keep_alive && !stopping && !WantsClose(resp);
    int status = resp.status;
    beast::error_code wec =
        co_await WriteResponse(*conn, std::move(resp), version, head, keep_alive, &status);
    if (observer) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - started_at)
                    .count();
      observer(req.route.empty() ? std::string("unmatched") : req.route, req.method, status, ns);
    }
    if (wec) co_return;
    if (!keep_alive) {
      conn->Close();
      co_return;
    }
  }
  conn->Close();
}

void HttpServer::Impl::CloseAll() {
  std::vector<std::shared_ptr<Connection>> open;
  {
    MutexLock lock(&conns_mu);
    stopping = true;
    for (auto& [id, weak] : conns) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  asio::post(acceptor.get_executor(), [this] {
    beast::error_code ignored;
    acceptor.close(ignored);
  });
  for (auto& c : open) {
    auto executor = c->stream.get_executor();
    asio::post(executor, [c = std::move(c)] { c->Close(); });
  }
}

HttpServer::HttpServer(ServerOptions options, const Router* router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetObserver(RequestObserver observer) { impl_->observer = std::move(observer); }

void HttpServer::SetBodyGate(BodyGate gate) { impl_->body_gate = std::move(gate); }

Status HttpServer::Start() {
  Impl& s = *impl_;
  MutexLock lock(&s.stop_mu);
  if (s.started || s.stopped) return Status::FailedPrecondition("server already started");
  if (s.router == nullptr) return Status::InvalidArgument("no router");
  try {
    beast::error_code ec;
    tcp::resolver resolver(s.ioc);
    auto results = resolver.resolve(s.options.address, std::to_string(s.options.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return Status::InvalidArgument("cannot resolve listen address '" + s.options.address +
                                     "': " + ec.message());
    }
    tcp::endpoint endpoint = results.begin()->endpoint();
    std::string where = s.options.address + ":" + std::to_string(s.options.port);
    if (s.acceptor.open(endpoint.protocol(), ec); ec) {
      return Status::IOError("socket for " + where + ": " + ec.message());
    }
    if (s.acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
      return Status::IOError("SO_REUSEADDR on " + where + ": " + ec.message());
    }
    if (s.acceptor.bind(endpoint, ec); ec) {
      Status failed = ListenError("bind", where, ec);
      s.acceptor.close(ec);  // overwrites ec: its message was taken above
      return failed;
    }
    if (s.acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
      Status failed = ListenError("listen", where, ec);
      s.acceptor.close(ec);
      return failed;
    }
    s.port = s.acceptor.local_endpoint(ec).port();
    asio::co_spawn(s.acceptor.get_executor(), s.AcceptLoop(), [](std::exception_ptr e) {
      if (e) LogError("accept loop ended with an exception");
    });
    int threads = std::max(1, s.options.io_threads);
    for (int i = 0; i < threads; ++i) {
      s.io_threads.emplace_back([&s] {
        while (true) {
          try {
            s.ioc.run();
            return;
          } catch (const std::exception& e) {
            LogError(std::string("io thread caught: ") + e.what());
          }
        }
      });
    }
  } catch (const std::exception& e) {
    return Status::Internal(std::string("starting the server failed: ") + e.what());
  }
  s.started = true;
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

const ServerStats& HttpServer::stats() const { return impl_->stats; }

void HttpServer::Stop() {
  Impl& s = *impl_;
  MutexLock lock(&s.stop_mu);
  if (s.stopped) return;
  if (s.started) {
    s.CloseAll();
    // The io_context runs out of work once the acceptor and every connection have closed;
    // handlers still running on the pool finish first.
    for (auto& t : s.io_threads) t.join();
    s.io_threads.clear();
    s.workers.join();
    s.readers.join();
  }
  s.stopped = true;
  s.stopped_cv.SignalAll();
}

void HttpServer::Wait() {
  Impl& s = *impl_;
  MutexLock lock(&s.stop_mu);
  while (!s.stopped) s.stopped_cv.Wait(s.stop_mu);
}

}  // namespace cohort::http
