// The HTTP layer's translation between its own messages (message.h) and Beast's, and the
// share of an in-flight byte budget a request body or a streamed response holds. Internal to
// the HTTP layer (server.cc): it includes Beast; include it nowhere else.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/message.h"

namespace cohort::http::internal {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;
using BeastResponse = boost::beast::http::response<boost::beast::http::string_body>;

void LogError(const std::string& what);
std::string ToLower(std::string_view s);
// Whether the request names a Transfer-Encoding (any coding).
bool HasTransferEncoding(const HttpRequest& req);
// Converts a handler's response into a Beast one. `head`: headers only, with the Content-Length
// the body would have. Invalid statuses become 500; unsafe headers are dropped (logged).
BeastResponse ToBeast(HttpResponse&& resp, unsigned version, bool head, bool keep_alive);
// Whether the handler asked for "Connection: close".
bool WantsClose(const HttpResponse& resp);
// Fills path and query of `out` from its target. False when the target is not a valid
// origin-form or absolute-form request target.
bool ParseTarget(HttpRequest* out);
// 503 + Retry-After: a request body found no room in --max-body-bytes-in-flight.
HttpResponse BodiesInFlightRefusal();
// The HTTP-layer error answer to a failed request read, or status 0 to close silently.
HttpResponse ReadErrorResponse(const boost::beast::error_code& ec);

// A share of one of the in-flight budgets (ServerOptions::max_body_bytes_in_flight for request
// bodies, max_response_bytes_in_flight for streamed responses), released when it goes out of
// scope (after the request was answered).
class BodyReservation {
 public:
  explicit BodyReservation(std::atomic<int64_t>* in_flight) : in_flight_(in_flight) {}
  ~BodyReservation() { Release(); }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;

  void Release() {
    if (bytes_ > 0) in_flight_->fetch_sub(bytes_, std::memory_order_relaxed);
    bytes_ = 0;
  }
  // Reserves `bytes` unless that would take the total past `limit`.
  bool Take(uint64_t bytes, size_t limit) { return GrowTo(bytes, limit); }
  // Holds `bytes` in all (more than now) unless that would take the total past `limit`.
  bool GrowTo(uint64_t bytes, size_t limit) {
    const int64_t want = static_cast<int64_t>(std::min<uint64_t>(bytes, limit + uint64_t{1}));
    if (want <= bytes_) return true;
    const int64_t more = want - bytes_;
    int64_t now = in_flight_->load(std::memory_order_relaxed);
    do {
      if (now + more > static_cast<int64_t>(limit)) return false;
    } while (!in_flight_->compare_exchange_weak(now, now + more, std::memory_order_relaxed));
    bytes_ = want;
    return true;
  }
  uint64_t bytes() const { return uint64_t(bytes_); }

 private:
  std::atomic<int64_t>* in_flight_;
  int64_t bytes_ = 0;
};

}  // namespace cohort::http::internal
