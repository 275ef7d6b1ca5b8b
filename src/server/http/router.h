// Router: maps (method, path) to a handler. Patterns are literal segments and {name}
// placeholders ("/api/v1/{entity}/{project}/runs/{run}"); a trailing "{name...}" matches the rest
// of the path (for static files). Literal segments win over placeholders, placeholders over a
// catch-all; when the more specific branch has no route for the request's method, the search
// goes on to the less specific ones (so "GET /{path...}" serves what the API does not). A
// placeholder never matches an empty segment; a catch-all may match nothing. Path parameters are
// percent-decoded per segment, so "%2F" stays inside its segment. HEAD uses the GET route when
// there is no HEAD one (the response keeps its body; the server sends none for HEAD). Unknown
// paths get 404, known paths with another method 405 (with an Allow header), both as JSON
// errors.
//
// Threading: register every route before the server starts; Dispatch is then thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/message.h"

namespace cohort::http {

using Handler = std::function<HttpResponse(HttpRequest&)>;

// How the server treats a route's requests.
struct RouteOptions {
  // The body is not read before the handler runs: the handler reads it through
  // HttpRequest::body_reader as it arrives, whatever its size (--max-body-bytes does not apply;
  // the handler refuses what it does not want, from BodyReader::length(), before reading). A
  // chunked body is refused with 411: the length must be known.
  bool stream_body = false;
  // For a streamed body: the most bytes of it the handler holds in memory at once. That much
  // (or the body's length, if smaller) is reserved from ServerOptions::max_body_bytes_in_flight
  // while the handler runs.
  size_t streamed_body_memory_bytes = 0;
};

class Router {
 public:
  Router();
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  void Add(std::string_view method, std::string_view pattern, Handler handler,
           RouteOptions options = {});
  // The options of the route a request (its head: method, target, path) would be dispatched to;
  // null when there is none.
  const RouteOptions* Options(const HttpRequest& head) const;
  // Finds the route, fills req.path_params and req.route, and runs the handler.
  HttpResponse Dispatch(HttpRequest& req) const;
  // Every (method, pattern) added, in the order added (tests enumerate the API with it).
  const std::vector<std::pair<std::string, std::string>>& Routes() const { return routes_; }

 private:
  struct Node;
  std::unique_ptr<Node> root_;
  std::vector<std::pair<std::string, std::string>> routes_;
};

}  // namespace cohort::http
