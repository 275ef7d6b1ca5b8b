#include "server/http/static_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace cohort::http {
namespace {

namespace fs = std::filesystem;

std::string HeaderOf(const HttpResponse& resp, std::string_view name) {
  for (const auto& [k, v] : resp.headers) {
    if (k == name) return v;
  }
  return "";
}

// A temporary UI build directory with an index, a hashed asset and a few other files, plus a
// secret file next to it that must stay unreachable.
class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("cohort_static_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    root_ = base_ / "ui";
    fs::create_directories(root_ / "assets");
    fs::create_directories(root_ / "img");
    Write(root_ / "index.html", "<html>app</html>");
    Write(root_ / "assets" / "app-1a2b.js", "console.log(1)");
    Write(root_ / "assets" / "app-1a2b.css", "body{}");
    Write(root_ / "assets" / "app-1a2b.js.map", "{}");
    Write(root_ / "assets" / "mod.wasm", "\0asm");
    Write(root_ / "assets" / "font.woff2", "w");
    Write(root_ / "img" / "logo.svg", "<svg/>");
    Write(root_ / "img" / "logo.png", "png");
    Write(root_ / "favicon.ico", "ico");
    Write(root_ / "manifest.json", "{}");
    Write(root_ / ".env", "SECRET=1");
    Write(base_ / "secret.txt", "secret");
    handler_ = StaticFiles(root_.string());
  }
  void TearDown() override { fs::remove_all(base_); }

  static void Write(const fs::path& p, const std::string& data) {
    std::ofstream(p, std::ios::binary) << data;
  }

  HttpResponse Get(std::string path) {
    HttpRequest req;
    req.method = "GET";
    req.path = "/" + path;
    req.path_params["path"] = std::move(path);
    return handler_(req);
  }

  fs::path base_;
  fs::path root_;
  Handler handler_;
};

TEST_F(StaticFilesTest, ServesFilesWithContentTypes) {
  struct Case {
    const char* path;
    const char* type;
  };
  const Case cases[] = {
      {"index.html", "text/html; charset=utf-8"},
      {"assets/app-1a2b.js", "text/javascript; charset=utf-8"},
      {"assets/app-1a2b.css", "text/css; charset=utf-8"},
      {"assets/app-1a2b.js.map", "application/json"},
      {"assets/mod.wasm", "application/wasm"},
      {"assets/font.woff2", "font/woff2"},
      {"img/logo.svg", "image/svg+xml"},
      {"img/logo.png", "image/png"},
      {"favicon.ico", "image/x-icon"},
      {"manifest.json", "application/json"},
  };
  for (const Case& c : cases) {
    HttpResponse resp = Get(c.path);
    EXPECT_EQ(resp.status, 200) << c.path;
    EXPECT_EQ(resp.content_type, c.type) << c.path;
  }
  EXPECT_EQ(Get("assets/app-1a2b.js").body, "console.log(1)");
}

TEST_F(StaticFilesTest, AssetsAreImmutableAndIndexIsNoCache) {
  EXPECT_EQ(HeaderOf(Get("assets/app-1a2b.js"), "Cache-Control"),
            "public, max-age=31536000, immutable");
  EXPECT_EQ(HeaderOf(Get("index.html"), "Cache-Control"), "no-cache");
  EXPECT_EQ(HeaderOf(Get(""), "Cache-Control"), "no-cache");
}

TEST_F(StaticFilesTest, EmptyPathServesIndex) {
  HttpResponse resp = Get("");
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "<html>app</html>");
  EXPECT_EQ(resp.content_type, "text/html; charset=utf-8");
}

TEST_F(StaticFilesTest, UnknownPathWithoutExtensionFallsBackToIndex) {
  HttpResponse resp = Get("me/project/runs/abc123");
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "<html>app</html>");
  EXPECT_EQ(HeaderOf(resp, "Cache-Control"), "no-cache");
  EXPECT_EQ(Get("img").body, "<html>app</html>");  // a directory
}

TEST_F(StaticFilesTest, UnknownPathWithExtensionIs404) {
  HttpResponse resp = Get("assets/missing-99.js");
  EXPECT_EQ(resp.status, 404);
  EXPECT_EQ(resp.content_type, "application/json");
}

TEST_F(StaticFilesTest, APageAddressWithADotIsTheAppForABrowserNavigation) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/me/my.proj/runs/a.b";
  req.path_params["path"] = "me/my.proj/runs/a.b";
  req.headers.emplace_back("accept", "text/html,application/xhtml+xml,*/*;q=0.8");
  HttpResponse resp = handler_(req);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "<html>app</html>");
  // Not for a missing asset, even asked for as HTML, nor without the browser's Accept.
  req.path = "/assets/missing-99.js";
  req.path_params["path"] = "assets/missing-99.js";
  EXPECT_EQ(handler_(req).status, 404);
  EXPECT_EQ(Get("me/my.proj/runs/a.b").status, 404);
}

TEST_F(StaticFilesTest, TraversalIsRejected) {
  EXPECT_EQ(Get("../secret.txt").status, 400);
  EXPECT_EQ(Get("assets/../../secret.txt").status, 400);
  EXPECT_EQ(Get("..").status, 400);
  EXPECT_EQ(Get("/etc/passwd").status, 400);
  EXPECT_EQ(Get(std::string("index.html\0.png", 15)).status, 400);
  EXPECT_EQ(Get("..\\secret.txt").status, 400);
  EXPECT_EQ(Get("assets/../../secret.txt").body.find("secret"), std::string::npos);
}

TEST_F(StaticFilesTest, HiddenFilesAreNotServed) { EXPECT_EQ(Get(".env").status, 404); }

TEST_F(StaticFilesTest, MissingIndexGives404) {
  fs::remove(root_ / "index.html");
  EXPECT_EQ(Get("some/route").status, 404);
}

TEST_F(StaticFilesTest, PagesAndAssetsCarryTheSecurityHeaders) {
  for (const char* path : {"", "runs/acme/x", "index.html", "assets/app-1a2b.js"}) {
    HttpResponse r = Get(path);
    ASSERT_EQ(r.status, 200) << path;
    const std::string csp = HeaderOf(r, "Content-Security-Policy");
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << path;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << path;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << path;
    EXPECT_EQ(HeaderOf(r, "X-Frame-Options"), "DENY") << path;
    EXPECT_EQ(HeaderOf(r, "Referrer-Policy"), "no-referrer") << path;
    EXPECT_EQ(HeaderOf(r, "X-Content-Type-Options"), "nosniff") << path;
  }
}

TEST(ContentTypeTest, UnknownExtensionIsOctetStream) {
  EXPECT_EQ(ContentTypeForPath("a/b.unknownext"), "application/octet-stream");
  EXPECT_EQ(ContentTypeForPath("noext"), "application/octet-stream");
  EXPECT_EQ(ContentTypeForPath("UP.HTML"), "text/html; charset=utf-8");
}

}  // namespace
}  // namespace cohort::http
