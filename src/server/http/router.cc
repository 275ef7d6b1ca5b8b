#include "server/http/router.h"

#include <cassert>
#include <map>
#include <set>
#include <utility>

namespace cohort::http {

namespace {

// One registered (method, pattern) pair.
struct Route {
  std::string pattern;
  std::vector<std::string> param_names;  // in pattern order; the catch-all name last
  Handler handler;
  RouteOptions options;
};

using RouteMap = std::map<std::string, Route, std::less<>>;  // method -> route

// "/" and "" are no segments; "/a/b/" is {"a", "b", ""}.
std::vector<std::string_view> SplitSegments(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return out;
  while (true) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool IsPlaceholder(std::string_view seg) {
  return seg.size() >= 3 && seg.front() == '{' && seg.back() == '}';
}

bool IsCatchAll(std::string_view seg) {
  return IsPlaceholder(seg) && seg.size() >= 6 && seg.substr(seg.size() - 4) == "...}";
}

const Route* FindMethod(const RouteMap& routes, std::string_view method) {
  auto it = routes.find(method);
  if (it == routes.end() && method == "HEAD") it = routes.find(std::string_view("GET"));
  return it == routes.end() ? nullptr : &it->second;
}

void AddAllowed(const RouteMap& routes, std::set<std::string>* allowed) {
  for (const auto& [method, route] : routes) {
    allowed->insert(method);
    if (method == "GET") allowed->insert("HEAD");
  }
}

// The path to route on, still percent-encoded where the target is available (so that an
// encoded '/' stays inside its segment), else the already decoded path.
std::string_view RawPath(const HttpRequest& req) {
  if (!req.target.empty() && req.target.front() == '/') {
    std::string_view t = req.target;
    return t.substr(0, t.find_first_of("?#"));
  }
  return req.path;
}

}  // namespace

namespace {

struct MatchState {
  std::string_view method;
  const std::vector<std::string>* segments;
  std::vector<std::string> values;  // placeholder values on the current trie path
  std::set<std::string> allowed;    // methods of routes matching the path, for 405
};

}  // namespace

// A trie node: one path segment.
struct Router::Node {
  std::map<std::string, std::unique_ptr<Node>, std::less<>> literals;
  std::unique_ptr<Node> param;  // a {name} segment
  RouteMap routes;              // routes ending at this node
  RouteMap catch_all;           // routes whose next and last segment is {name...}

  // Depth-first search from segment i: literal child, then placeholder child, then catch-all;
  // the first route that matches both path and method wins.
  const Route* Find(size_t i, MatchState* st) const {
    const auto& segs = *st->segments;
    if (i == segs.size()) {
      if (const Route* r = FindMethod(routes, st->method)) return r;
      AddAllowed(routes, &st->allowed);
      return FindCatchAll(i, st);
    }
    auto lit = literals.find(segs[i]);
    if (lit != literals.end()) {
      if (const Route* r = lit->second->Find(i + 1, st)) return r;
    }
    if (param != nullptr && !segs[i].empty()) {
      st->values.push_back(segs[i]);
      if (const Route* r = param->Find(i + 1, st)) return r;
      st->values.pop_back();
    }
    return FindCatchAll(i, st);
  }

  const Route* FindCatchAll(size_t i, MatchState* st) const {
    if (catch_all.empty()) return nullptr;
    const Route* route = FindMethod(catch_all, st->method);
    if (route == nullptr) {
      AddAllowed(catch_all, &st->allowed);
      return nullptr;
    }
    std::string rest;
    for (size_t k = i; k < st->segments->size(); ++k) {
      if (k > i) rest.push_back('/');
      rest += (*st->segments)[k];
    }
    st->values.push_back(std::move(rest));
    return route;
  }
};

Router::Router() : root_(std::make_unique<Node>()) {}
Router::~Router() = default;

void Router::Add(std::string_view method, std::string_view pattern, Handler handler,
                 RouteOptions options) {
  routes_.emplace_back(std::string(method), std::string(pattern));
  Route route;
  route.pattern = std::string(pattern);
  route.handler = std::move(handler);
  route.options = options;
  Node* node = root_.get();
  std::vector<std::string_view> segs = SplitSegments(pattern);
  for (size_t i = 0; i < segs.size(); ++i) {
    std::string_view seg = segs[i];
    if (IsCatchAll(seg)) {
      assert(i + 1 == segs.size() && "a {name...} catch-all must be the last segment");
      route.param_names.emplace_back(seg.substr(1, seg.size() - 5));
      node->catch_all[std::string(method)] = std::move(route);
      return;
    }
    if (IsPlaceholder(seg)) {
      route.param_names.emplace_back(seg.substr(1, seg.size() - 2));
      if (node->param == nullptr) node->param = std::make_unique<Node>();
      node = node->param.get();
      continue;
    }
    auto& child = node->literals[std::string(seg)];
    if (child == nullptr) child = std::make_unique<Node>();
    node = child.get();
  }
  node->routes[std::string(method)] = std::move(route);
}

const RouteOptions* Router::Options(const HttpRequest& head) const {
  std::vector<std::string> segments;
  for (std::string_view seg : SplitSegments(RawPath(head))) segments.push_back(PercentDecode(seg));
  MatchState st;
  st.method = head.method;
  st.segments = &segments;
  const Route* route = root_->Find(0, &st);
  return route == nullptr ? nullptr : &route->options;
}

HttpResponse Router::Dispatch(HttpRequest& req) const {
  std::vector<std::string> segments;
  for (std::string_view seg : SplitSegments(RawPath(req))) segments.push_back(PercentDecode(seg));
  MatchState st;
  st.method = req.method;
  st.segments = &segments;
  const Route* route = root_->Find(0, &st);
  if (route == nullptr) {
    req.route.clear();
    if (st.allowed.empty()) {
      return HttpResponse::Error(404, "not_found", "no route for " + req.path);
    }
    std::string allow;
    for (const std::string& m : st.allowed) {
      if (!allow.empty()) allow += ", ";
      allow += m;
    }
    HttpResponse resp = HttpResponse::Error(
        405, "method_not_allowed", "method " + req.method + " is not allowed for " + req.path);
    resp.headers.emplace_back("Allow", std::move(allow));
    return resp;
  }
  req.route = route->pattern;
  req.path_params.clear();
  for (size_t k = 0; k < route->param_names.size() && k < st.values.size(); ++k) {
    req.path_params[route->param_names[k]] = std::move(st.values[k]);
  }
  return route->handler(req);
}

}  // namespace cohort::http
