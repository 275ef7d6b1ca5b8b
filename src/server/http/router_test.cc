#include "server/http/router.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::http {
namespace {

Handler Named(std::string name) {
  return [name](HttpRequest&) { return HttpResponse::Text(200, name); };
}

HttpRequest Request(std::string method, std::string target) {
  HttpRequest req;
  req.method = std::move(method);
  req.target = target;
  req.path = target.substr(0, target.find('?'));
  return req;
}

HttpResponse Call(const Router& router, std::string method, std::string target,
                  HttpRequest* out = nullptr) {
  HttpRequest req = Request(std::move(method), std::move(target));
  HttpResponse resp = router.Dispatch(req);
  if (out != nullptr) *out = req;
  return resp;
}

std::string HeaderOf(const HttpResponse& resp, std::string_view name) {
  for (const auto& [k, v] : resp.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(RouterTest, LiteralSegmentBeatsPlaceholder) {
  Router router;
  router.Add("GET", "/runs/{run}", Named("param"));
  router.Add("GET", "/runs/latest", Named("literal"));
  EXPECT_EQ(Call(router, "GET", "/runs/latest").body, "literal");
  EXPECT_EQ(Call(router, "GET", "/runs/abc").body, "param");
}

TEST(RouterTest, PlaceholderIsTriedWhenLiteralBranchDoesNotMatch) {
  Router router;
  router.Add("GET", "/a/latest/x", Named("literal"));
  router.Add("GET", "/a/{id}/y", Named("param"));
  HttpRequest req;
  EXPECT_EQ(Call(router, "GET", "/a/latest/y", &req).body, "param");
  EXPECT_EQ(req.PathParam("id"), "latest");
}

TEST(RouterTest, PlaceholdersFillPathParamsAndRoute) {
  Router router;
  router.Add("GET", "/api/v1/{entity}/{project}/runs/{run}", Named("run"));
  HttpRequest req;
  HttpResponse resp = Call(router, "GET", "/api/v1/me/proj/runs/r1?x=1", &req);
  EXPECT_EQ(resp.body, "run");
  EXPECT_EQ(req.PathParam("entity"), "me");
  EXPECT_EQ(req.PathParam("project"), "proj");
  EXPECT_EQ(req.PathParam("run"), "r1");
  EXPECT_EQ(req.route, "/api/v1/{entity}/{project}/runs/{run}");
}

TEST(RouterTest, PlaceholderNamesMayDifferBetweenMethods) {
  Router router;
  router.Add("GET", "/x/{a}", Named("get"));
  router.Add("PUT", "/x/{b}", Named("put"));
  HttpRequest req;
  EXPECT_EQ(Call(router, "PUT", "/x/1", &req).body, "put");
  EXPECT_EQ(req.PathParam("b"), "1");
  EXPECT_EQ(req.PathParam("a"), "");
}

TEST(RouterTest, PlaceholderDoesNotMatchEmptySegment) {
  Router router;
  router.Add("GET", "/runs/{run}", Named("run"));
  EXPECT_EQ(Call(router, "GET", "/runs/").status, 404);
}

TEST(RouterTest, CatchAllCapturesRestOfPath) {
  Router router;
  router.Add("GET", "/static/{path...}", Named("static"));
  HttpRequest req;
  EXPECT_EQ(Call(router, "GET", "/static/assets/app.js", &req).body, "static");
  EXPECT_EQ(req.PathParam("path"), "assets/app.js");
  EXPECT_EQ(req.route, "/static/{path...}");
}

TEST(RouterTest, CatchAllMatchesEmptyRest) {
  Router router;
  router.Add("GET", "/{path...}", Named("ui"));
  HttpRequest req;
  EXPECT_EQ(Call(router, "GET", "/", &req).body, "ui");
  EXPECT_EQ(req.PathParam("path"), "");
}

TEST(RouterTest, MoreSpecificRoutesBeatCatchAll) {
  Router router;
  router.Add("GET", "/{path...}", Named("ui"));
  router.Add("GET", "/api/v1/runs", Named("runs"));
  EXPECT_EQ(Call(router, "GET", "/api/v1/runs").body, "runs");
  EXPECT_EQ(Call(router, "GET", "/api/v1/other").body, "ui");
}

TEST(RouterTest, UnknownPathGives404Json) {
  Router router;
  router.Add("GET", "/a", Named("a"));
  HttpRequest req;
  HttpResponse resp = Call(router, "GET", "/b", &req);
  EXPECT_EQ(resp.status, 404);
  EXPECT_EQ(resp.content_type, "application/json");
  EXPECT_EQ(resp.body, R"({"error":{"code":"not_found","message":"no route for /b"}})");
  EXPECT_EQ(req.route, "");
}

TEST(RouterTest, WrongMethodGives405WithAllowHeader) {
  Router router;
  router.Add("GET", "/a", Named("get"));
  router.Add("POST", "/a", Named("post"));
  HttpResponse resp = Call(router, "DELETE", "/a");
  EXPECT_EQ(resp.status, 405);
  EXPECT_EQ(HeaderOf(resp, "Allow"), "GET, HEAD, POST");
  EXPECT_NE(resp.body.find(R"("code":"method_not_allowed")"), std::string::npos);
}

TEST(RouterTest, HeadFallsBackToGet) {
  Router router;
  router.Add("GET", "/a", Named("get"));
  HttpResponse resp = Call(router, "HEAD", "/a");
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "get");  // the server omits it on the wire
}

TEST(RouterTest, ExplicitHeadRouteBeatsGet) {
  Router router;
  router.Add("GET", "/a", Named("get"));
  router.Add("HEAD", "/a", Named("head"));
  EXPECT_EQ(Call(router, "HEAD", "/a").body, "head");
}

TEST(RouterTest, PathParamsArePercentDecoded) {
  Router router;
  router.Add("GET", "/runs/{run}/files/{name}", Named("file"));
  HttpRequest req;
  EXPECT_EQ(Call(router, "GET", "/runs/a%20b/files/x%2Fy.txt", &req).body, "file");
  EXPECT_EQ(req.PathParam("run"), "a b");
  EXPECT_EQ(req.PathParam("name"), "x/y.txt");  // an encoded '/' stays inside its segment
}

TEST(RouterTest, EncodedLiteralSegmentMatches) {
  Router router;
  router.Add("GET", "/a b", Named("space"));
  EXPECT_EQ(Call(router, "GET", "/a%20b").body, "space");
}

TEST(RouterTest, DecodedPathIsUsedWhenTargetIsEmpty) {
  Router router;
  router.Add("GET", "/x/{id}", Named("x"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/x/42";
  EXPECT_EQ(router.Dispatch(req).body, "x");
  EXPECT_EQ(req.PathParam("id"), "42");
}

TEST(RouterTest, RoutesListsEveryAddedRouteInOrder) {
  Router router;
  router.Add("GET", "/a/{id}", Named("a"));
  router.Add("POST", "/a/{id}", Named("b"));
  router.Add("GET", "/{path...}", Named("c"));
  using Route = std::pair<std::string, std::string>;
  EXPECT_EQ(router.Routes(),
            (std::vector<Route>{{"GET", "/a/{id}"}, {"POST", "/a/{id}"}, {"GET", "/{path...}"}}));
}

}  // namespace
}  // namespace cohort::http
