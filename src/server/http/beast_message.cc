#include "server/http/beast_message.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cstdio>

namespace cohort::http::internal {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

constexpr const char* kServerName = "cohort";

// Headers the server sets itself; a handler's values for them are ignored.
bool IsManagedHeader(std::string_view lower) {
  return lower == "content-length" || lower == "transfer-encoding" || lower == "connection";
}

// Token characters of RFC 9110 field names.
bool IsSafeHeaderName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// No CR, LF or NUL: a handler's value must not be able to split the response.
bool IsSafeHeaderValue(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

}  // namespace

void LogError(const std::string& what) { std::fprintf(stderr, "cohort http: %s\n", what.c_str()); }

bool HasTransferEncoding(const HttpRequest& req) {
  for (const auto& [name, value] : req.headers) {
    if (name == "transfer-encoding") return true;
  }
  return false;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

BeastResponse ToBeast(HttpResponse&& resp, unsigned version, bool head, bool keep_alive) {
  if (resp.status < 100 || resp.status > 999) {
    LogError("handler returned invalid status " + std::to_string(resp.status));
    resp = HttpResponse::Error(500, "internal", "internal server error");
  }
  BeastResponse res;
  res.version(version);
  res.result(static_cast<unsigned>(resp.status));
  res.set(bhttp::field::server, kServerName);
  if (IsSafeHeaderValue(resp.content_type)) {
    res.set(bhttp::field::content_type, resp.content_type);
  }
  for (auto& [name, value] : resp.headers) {
    std::string lower = ToLower(name);
    if (IsManagedHeader(lower)) continue;  // "Connection: close" is honoured by the caller
    if (!IsSafeHeaderName(name) || !IsSafeHeaderValue(value)) {
      LogError("dropped invalid response header '" + name + "'");
      continue;
    }
    if (lower == "content-type" || lower == "server") {
      res.set(name, value);
    } else {
      res.insert(name, value);
    }
  }
  res.keep_alive(keep_alive);
  if (keep_alive) res.set(bhttp::field::connection, "keep-alive");
  bool bodiless = resp.status < 200 || resp.status == 204 || resp.status == 304;
  if (bodiless) {
    res.prepare_payload();
  } else if (head) {
    res.content_length(resp.body_source ? resp.streamed_length : resp.body.size());
  } else {
    res.body() = std::move(resp.body);
    res.prepare_payload();
  }
  return res;
}

bool WantsClose(const HttpResponse& resp) {
  for (const auto& [name, value] : resp.headers) {
    if (beast::iequals(name, "connection") && beast::iequals(value, "close")) return true;
  }
  return false;
}

bool ParseTarget(HttpRequest* out) {
  namespace urls = boost::urls;
  std::string_view target = out->target;
  auto parsed = !target.empty() && target.front() == '/' ? urls::parse_origin_form(target)
                                                         : urls::parse_absolute_uri(target);
  if (!parsed) return false;
  const urls::url_view& url = *parsed;
  out->path = url.path();
  if (out->path.empty()) out->path = "/";
  if (url.has_query()) {
    for (auto param : url.params(urls::encoding_opts(/*space_as_plus=*/true))) {
      if (param.key.empty() && !param.has_value) continue;
      out->query.emplace(std::move(param.key), std::move(param.value));
    }
  }
  return true;
}

HttpResponse BodiesInFlightRefusal() {
  HttpResponse busy =
      HttpResponse::Error(503, "unavailable", "too many request bodies in flight; retry later");
  busy.headers.emplace_back("Retry-After", "1");
  return busy;
}

HttpResponse ReadErrorResponse(const beast::error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    return HttpResponse::Error(431, "header_too_large", "request header fields too large");
  }
  if (ec == bhttp::error::body_limit) {
    return HttpResponse::Error(413, "payload_too_large", "request body too large");
  }
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec.category() != bhttp::make_error_code(bhttp::error::bad_target).category()) {
    HttpResponse none;
    none.status = 0;  // connection closed, timed out or failed: nothing to answer
    return none;
  }
  return HttpResponse::Error(400, "bad_request", "malformed request: " + ec.message());
}

}  // namespace cohort::http::internal
