// Connection and SocketBodyReader: one accepted socket of HttpServer, and the reader of a
// streamed request body on it (RouteOptions::stream_body). Internal to the HTTP layer
// (server.cc): with beast_message.h, the only headers that include Beast and Asio; include them
// nowhere else.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/mutex.h"
#include "server/http/message.h"

namespace cohort::http::internal {

// One accepted socket, shared by its session coroutine and the registry used by Stop().
struct Connection {
  explicit Connection(boost::asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
  // Call on the connection's strand.
  void Close() {
    boost::beast::error_code ec;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    stream.close();
  }
  boost::beast::tcp_stream stream;
};

// The body of a streamed request (RouteOptions::stream_body), read from the connection as the
// handler asks: Next, on the handler's thread, starts a read on the connection's strand (its
// session coroutine is suspended meanwhile, waiting for the handler) and waits for it. The
// bytes that arrived with the head are handed out first; "100 Continue" is sent before the
// first read from the socket when the client asked for it.
class SocketBodyReader final : public BodyReader {
 public:
  SocketBodyReader(std::shared_ptr<Connection> conn, uint64_t length, std::string arrived,
                   bool send_continue, std::chrono::seconds read_timeout);

  uint64_t length() const override { return length_; }
  uint64_t received() const override { return received_; }
  bool complete() const { return received_ == length_; }
  bool failed() const { return !failure_.ok(); }
  Result<std::string_view> Next() override;

 private:
  void StartRead();  // on the connection's strand
  void Finish(boost::beast::error_code ec, size_t n);

  std::shared_ptr<Connection> conn_;
  const uint64_t length_;
  std::string arrived_;
  bool send_continue_;  // strand only, once reads begin
  const std::chrono::seconds read_timeout_;
  uint64_t received_ = 0;
  std::string chunk_;
  Status failure_;
  Mutex mu_;
  CondVar cv_;
  bool done_ COHORT_GUARDED_BY(mu_) = false;
  boost::beast::error_code ec_ COHORT_GUARDED_BY(mu_);
  size_t n_ COHORT_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::http::internal
