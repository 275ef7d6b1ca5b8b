// HttpRequest / HttpResponse: the HTTP layer's own plain message types, so that route handlers
// never see Boost types. Value types.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cohort/status.h"

namespace cohort::http {

// A request body read as it arrives, for routes registered with RouteOptions::stream_body: the
// handler pulls chunks while the client sends them, so a body of any size passes through a
// bounded buffer. Used from the handler's thread only.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // The body's Content-Length.
  virtual uint64_t length() const = 0;
  // Bytes handed out by Next so far.
  virtual uint64_t received() const = 0;
  // The next bytes of the body (at most kBodyChunkBytes), valid until the next call; empty once
  // the whole body was handed out. kIOError when the connection closed or failed before the
  // end, kDeadlineExceeded when no byte arrived within the server's request timeout,
  // kUnavailable when the server is stopping; every later call returns the same error.
  virtual Result<std::string_view> Next() = 0;
};

// The most bytes one BodyReader::Next hands out.
inline constexpr size_t kBodyChunkBytes = 256 << 10;

// A BodyReader over bytes in memory, handed out in chunks of `chunk_bytes` (tests of streaming
// handlers; a body that was read whole).
class StringBodyReader final : public BodyReader {
 public:
  explicit StringBodyReader(std::string body, size_t chunk_bytes = kBodyChunkBytes)
      : body_(std::move(body)), chunk_bytes_(chunk_bytes == 0 ? 1 : chunk_bytes) {}
  uint64_t length() const override { return body_.size(); }
  uint64_t received() const override { return offset_; }
  Result<std::string_view> Next() override {
    std::string_view out = std::string_view(body_).substr(offset_, chunk_bytes_);
    offset_ += out.size();
    return out;
  }

 private:
  std::string body_;
  size_t chunk_bytes_;
  size_t offset_ = 0;
};

struct HttpRequest {
  std::string method;                             // "GET", "POST", ...
  std::string target;                             // raw request target, e.g. "/api/v1/x?y=1"
  std::string path;                               // percent-decoded path, without the query
  std::multimap<std::string, std::string> query;  // percent-decoded query parameters
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;  // empty for a streamed body (see body_reader)
  // Set for routes registered with RouteOptions::stream_body (the body is read through it, never
  // into `body`); null otherwise. Valid during the handler call only.
  BodyReader* body_reader = nullptr;
  std::string remote_address;
  // Filled by the router: values of {name} segments of the matched pattern.
  std::map<std::string, std::string> path_params;
  // Filled by the router: the matched route pattern ("/api/v1/{entity}"), for metrics labels.
  std::string route;

  // First header with this (lower-case) name, or empty.
  std::string_view Header(std::string_view name) const;
  // First query parameter with this name, or `fallback`.
  std::string QueryParam(std::string_view name, std::string_view fallback = {}) const;
  bool HasQueryParam(std::string_view name) const;
  std::string PathParam(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // A body sent in pieces as they are made (a large download), instead of `body`: the server
  // sends `streamed_length` as Content-Length, then calls this on the handler pool for the next
  // piece until that many bytes went out. An error, an empty piece before the end or one past
  // it closes the connection (the client sees a short body). Null: `body` is the body.
  std::function<Result<std::string>()> body_source;
  uint64_t streamed_length = 0;
  // The most bytes one call of body_source returns (0: streamed_length): the response's share
  // of ServerOptions::max_response_bytes_in_flight while it is sent.
  uint64_t streamed_piece_bytes = 0;

  static HttpResponse Json(int status, std::string body);
  static HttpResponse Text(int status, std::string body, std::string content_type = "text/plain");
  // {"error": {"code": "<code>", "message": "<message>"}} with the given status.
  static HttpResponse Error(int status, std::string_view code, std::string_view message);
};

// Decodes %XX escapes (and '+' as a space when `plus_as_space`). Malformed escapes ("%zz", a
// trailing "%") are kept as they are.
std::string PercentDecode(std::string_view in, bool plus_as_space = false);

}  // namespace cohort::http
