// HttpRequest / HttpResponse: the HTTP layer's own plain message types, so that route handlers
// never see Boost types. Value types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort::http {

struct HttpRequest {
  std::string method;                             // "GET", "POST", ...
  std::string target;                             // raw request target, e.g. "/api/v1/x?y=1"
  std::string path;                               // percent-decoded path, without the query
  std::multimap<std::string, std::string> query;  // percent-decoded query parameters
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
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

  static HttpResponse Json(int status, std::string body);
  static HttpResponse Text(int status, std::string body, std::string content_type = "text/plain");
  // {"error": {"code": "<code>", "message": "<message>"}} with the given status.
  static HttpResponse Error(int status, std::string_view code, std::string_view message);
};

// Decodes %XX escapes (and '+' as a space when `plus_as_space`). Malformed escapes ("%zz", a
// trailing "%") are kept as they are.
std::string PercentDecode(std::string_view in, bool plus_as_space = false);

}  // namespace cohort::http
