#include "server/http/static_files.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

namespace cohort::http {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";
constexpr std::string_view kNoCache = "no-cache";
constexpr std::string_view kAssetsPrefix = "assets/";

struct ContentTypeEntry {
  std::string_view extension;
  std::string_view content_type;
};

constexpr std::array<ContentTypeEntry, 21> kContentTypes = {{
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"wasm", "application/wasm"},
    {"ico", "image/x-icon"},
    {"woff2", "font/woff2"},
    {"woff", "font/woff"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain; charset=utf-8"},
    {"webmanifest", "application/manifest+json"},
    {"xml", "application/xml"},
}};

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// What a request path resolved to.
struct Resolved {
  std::vector<std::string> segments;  // validated, without empty ones
  bool trailing_slash = false;
  HttpResponse error;  // status != 200 when the path is rejected
};

Resolved Validate(std::string_view rel) {
  Resolved out;
  if (rel.find('\0') != std::string_view::npos || rel.find('\\') != std::string_view::npos) {
    out.error = HttpResponse::Error(400, "invalid_path", "invalid character in path");
    return out;
  }
  if (!rel.empty() && rel.front() == '/') {
    out.error = HttpResponse::Error(400, "invalid_path", "absolute paths are not allowed");
    return out;
  }
  out.trailing_slash = !rel.empty() && rel.back() == '/';
  while (!rel.empty()) {
    size_t slash = rel.find('/');
    std::string_view seg = rel.substr(0, slash);
    rel = slash == std::string_view::npos ? std::string_view() : rel.substr(slash + 1);
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      out.error = HttpResponse::Error(400, "invalid_path", "'..' is not allowed in paths");
      return out;
    }
    if (seg.front() == '.') {
      out.error = HttpResponse::Error(404, "not_found", "no such file");
      return out;
    }
    out.segments.emplace_back(seg);
  }
  return out;
}

bool ReadFile(const fs::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return false;
  *out = std::move(buffer).str();
  return true;
}

HttpResponse ServeFile(const fs::path& path, std::string_view name, std::string_view cache) {
  std::string body;
  if (!ReadFile(path, &body)) {
    return HttpResponse::Error(500, "io_error", "cannot read file");
  }
  HttpResponse resp =
      HttpResponse::Text(200, std::move(body), std::string(ContentTypeForPath(name)));
  resp.headers.emplace_back("Cache-Control", std::string(cache));
  AddPageSecurityHeaders(&resp);
  return resp;
}

// The configuration the handler captures.
struct Config {
  fs::path root;
  std::string index_file;
};

HttpResponse ServeIndex(const Config& config) {
  std::error_code ec;
  fs::path index = config.root / config.index_file;
  if (!fs::is_regular_file(index, ec)) {
    return HttpResponse::Error(404, "not_found", "no such file");
  }
  return ServeFile(index, config.index_file, kNoCache);
}

HttpResponse Serve(const Config& config, const HttpRequest& req) {
  Resolved resolved = Validate(req.PathParam("path"));
  if (resolved.error.status != 200) return resolved.error;
  if (resolved.segments.empty()) return ServeIndex(config);
  fs::path path = config.root;
  std::string rel;
  for (const std::string& seg : resolved.segments) {
    path /= seg;
    if (!rel.empty()) rel.push_back('/');
    rel += seg;
  }
  std::error_code ec;
  if (!resolved.trailing_slash && fs::is_regular_file(path, ec)) {
    if (rel == config.index_file) return ServeFile(path, rel, kNoCache);
    bool immutable = rel.compare(0, kAssetsPrefix.size(), kAssetsPrefix) == 0;
    return ServeFile(path, rel, immutable ? kImmutable : kNoCache);
  }
  const std::string& last = resolved.segments.back();
  if (resolved.trailing_slash || last.find('.') == std::string::npos) return ServeIndex(config);
  // A page address whose last name holds a dot (a run id "a.b", a project "my.proj" in
  // /ENTITY/PROJECT/runs/ID): a browser navigating to it asks for HTML; a missing asset, script
  // or icon is asked for as something else and stays a 404.
  const bool under_assets = rel.compare(0, kAssetsPrefix.size(), kAssetsPrefix) == 0;
  if (!under_assets && req.Header("accept").find("text/html") != std::string_view::npos) {
    return ServeIndex(config);
  }
  return HttpResponse::Error(404, "not_found", "no such file");
}

}  // namespace

void AddPageSecurityHeaders(HttpResponse* resp) {
  resp->headers.emplace_back("Content-Security-Policy", std::string(kPageContentSecurityPolicy));
  resp->headers.emplace_back("X-Frame-Options", "DENY");
  resp->headers.emplace_back("Referrer-Policy", "no-referrer");
  resp->headers.emplace_back("X-Content-Type-Options", "nosniff");
}

std::string_view ContentTypeForPath(std::string_view file_name) {
  size_t slash = file_name.rfind('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  size_t dot = file_name.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  std::string ext = ToLower(file_name.substr(dot + 1));
  for (const auto& entry : kContentTypes) {
    if (entry.extension == ext) return entry.content_type;
  }
  return "application/octet-stream";
}

Handler StaticFiles(std::string root_dir, std::string index_file) {
  auto config = std::make_shared<Config>();
  config->root = fs::path(std::move(root_dir));
  config->index_file = std::move(index_file);
  return [config](HttpRequest& req) { return Serve(*config, req); };
}

}  // namespace cohort::http
