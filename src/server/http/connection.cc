#include "server/http/connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace cohort::http::internal {

namespace asio = boost::asio;
namespace beast = boost::beast;

SocketBodyReader::SocketBodyReader(std::shared_ptr<Connection> conn, uint64_t length,
                                   std::string arrived, bool send_continue,
                                   std::chrono::seconds read_timeout)
    : conn_(std::move(conn)),
      length_(length),
      arrived_(std::move(arrived)),
      send_continue_(send_continue),
      read_timeout_(read_timeout) {}

Result<std::string_view> SocketBodyReader::Next() {
  if (!failure_.ok()) return failure_;
  if (!arrived_.empty()) {
    chunk_ = std::move(arrived_);
    arrived_.clear();
    received_ += chunk_.size();
    return std::string_view(chunk_);
  }
  if (received_ == length_) return std::string_view();
  chunk_.resize(static_cast<size_t>(std::min<uint64_t>(kBodyChunkBytes, length_ - received_)));
  {
    MutexLock lock(&mu_);
    done_ = false;
  }
  asio::post(conn_->stream.get_executor(), [this] { StartRead(); });
  beast::error_code ec;
  size_t n = 0;
  {
    MutexLock lock(&mu_);
    while (!done_) cv_.Wait(mu_);
    ec = ec_;
    n = n_;
  }
  if (ec) {
    const std::string where = " after " + std::to_string(received_) + " of " +
                              std::to_string(length_) + " bytes of the request body";
    if (ec == beast::error::timeout) {
      failure_ = Status::DeadlineExceeded("no byte arrived for " +
                                          std::to_string(read_timeout_.count()) + " s" + where);
    } else if (ec == asio::error::operation_aborted) {
      failure_ = Status::Unavailable("the server is stopping" + where);
    } else {
      failure_ = Status::IOError("the connection closed (" + ec.message() + ")" + where);
    }
    return failure_;
  }
  received_ += n;
  return std::string_view(chunk_.data(), n);
}

void SocketBodyReader::StartRead() {
  if (send_continue_) {
    send_continue_ = false;
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    conn_->stream.expires_after(read_timeout_);
    asio::async_write(conn_->stream, asio::buffer(kContinue.data(), kContinue.size()),
                      [this](beast::error_code ec, size_t) {
                        if (ec) return Finish(ec, 0);
                        StartRead();
                      });
    return;
  }
  conn_->stream.expires_after(read_timeout_);
  conn_->stream.async_read_some(asio::buffer(chunk_.data(), chunk_.size()),
                                [this](beast::error_code ec, size_t n) { Finish(ec, n); });
}

void SocketBodyReader::Finish(beast::error_code ec, size_t n) {
  MutexLock lock(&mu_);
  ec_ = ec;
  n_ = n;
  done_ = true;
  cv_.SignalAll();
}

}  // namespace cohort::http::internal
