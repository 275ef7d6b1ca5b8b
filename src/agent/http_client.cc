#include "agent/http_client.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "agent/backoff.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The CA bundle used when the caller names none (options_.ca_file). A libcurl built with a
// default bundle (the system's, e.g. Debian's) keeps it; the portable build of the wheels
// (cmake/CohortDependencies.cmake) has none, since the path differs between distributions.
// Empty: curl's default.
const std::string& DefaultCaBundle() {
  static const std::string bundle = [] {
    const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
    if (info->cainfo != nullptr || info->capath != nullptr) return std::string();
    const char* env = std::getenv("SSL_CERT_FILE");
    return FindCaBundle(*wal::FileSystem::Default(), env != nullptr ? env : "");
  }();
  return bundle;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct HeaderState {
  std::optional<std::string> retry_after;
  std::string* body = nullptr;  // reserved to the answer's Content-Length
  // The last head began was ended by its blank line. libcurl reports success for an answer whose
  // connection closed after the status line (status 200, no body): cut on the way, not an answer.
  bool head_ended = false;
};

// The value of header `name` (lowercase, with its colon) in `line`, if that is the header.
std::optional<std::string_view> HeaderValue(std::string_view line, std::string_view name) {
  if (line.size() <= name.size()) return std::nullopt;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = line[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != name[i]) return std::nullopt;
  }
  std::string_view v = line.substr(name.size());
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.remove_suffix(1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

// The most a Content-Length reserves up front (a range of an artifact's file is 8 MiB).
constexpr uint64_t kMaxBodyReserve = uint64_t{64} << 20;

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  auto* state = static_cast<HeaderState*>(user);
  if (line.starts_with("HTTP/")) {
    state->head_ended = false;  // a head begins (after a 100 Continue's, another)
  } else if (line == "\r\n" || line == "\n") {
    state->head_ended = true;
  }
  if (auto v = HeaderValue(line, "retry-after:")) {
    state->retry_after = std::string(*v);
  } else if (auto len = HeaderValue(line, "content-length:"); len && state->body != nullptr) {
    // Reserved once: a body appended piece by piece would grow by doubling, up to twice its size
    // (a download holds a few 8 MiB ranges at once).
    uint64_t bytes = 0;
    auto [p, ec] = std::from_chars(len->data(), len->data() + len->size(), bytes);
    if (ec == std::errc() && bytes <= kMaxBodyReserve) state->body->reserve(size_t(bytes));
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;
}

}  // namespace

std::string AnswerErrorText(const HttpResponse& r) {
  auto v = json::Parse(r.body);
  if (v.ok() && v->is_object()) {
    if (const boost::json::value* e = v->as_object().if_contains("error"); e && e->is_object()) {
      const boost::json::object& eo = e->as_object();
      std::string out = "HTTP " + std::to_string(r.status);
      if (auto* c = eo.if_contains("code"); c && c->is_string()) {
        out += " " + std::string(c->as_string());
      }
      if (auto* m = eo.if_contains("message"); m && m->is_string()) {
        out += ": " + std::string(m->as_string());
      }
      return out;
    }
  }
  return "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 300);
}

std::string FindCaBundle(wal::FileSystem& fs, std::string_view ssl_cert_file,
                         std::span<const std::string_view> candidates) {
  if (!ssl_cert_file.empty()) return std::string(ssl_cert_file);
  for (std::string_view path : candidates) {
    auto exists = fs.Exists(std::string(path));
    if (exists.ok() && *exists) return std::string(path);
  }
  return std::string();
}

HttpClient::HttpClient(std::string base_url, HttpClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  if (options_.ca_file.empty()) {
    if (const char* ca = std::getenv("COHORT_CA_BUNDLE"); ca != nullptr) options_.ca_file = ca;
  }
  GlobalInitOnce();
}

HttpClient::~HttpClient() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<HttpResponse> HttpClient::Request(std::string_view method, std::string_view path,
                                         std::string_view body, std::string_view api_key,
                                         std::string_view content_type,
                                         std::string_view extra_header) {
  last_answer_started_ = false;
  if (aborted_.load()) return Status::Unavailable("http: aborted");
  if (!curl_) {
    curl_ = curl_easy_init();
    if (!curl_) return Status::Internal("http: curl_easy_init failed");
  }
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);  // keeps the connection cache

  std::string url = base_url_;
  url.append(path);
  HttpResponse response;
  HeaderState headers;
  headers.body = &response.body;
  char error[CURL_ERROR_SIZE] = {0};

  struct curl_slist* list = nullptr;
  std::string content_type_header = "Content-Type: ";
  content_type_header.append(content_type);
  list = curl_slist_append(list, content_type_header.c_str());
  std::string extra(extra_header);
  // An `Accept` in extra_header replaces the default one (curl would send both, and a server
  // reads the first).
  const bool own_accept = extra.size() >= 7 && strncasecmp(extra.c_str(), "Accept:", 7) == 0;
  if (!own_accept) list = curl_slist_append(list, "Accept: application/json");
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for large bodies
  // Several headers: separated by CRLF.
  for (size_t at = 0; at < extra.size();) {
    const size_t end = std::min(extra.find("\r\n", at), extra.size());
    if (end > at) list = curl_slist_append(list, extra.substr(at, end - at).c_str());
    at = end + 2;
  }
  std::string auth;
  if (!api_key.empty()) {
    auth = "Authorization: Bearer ";
    auth.append(api_key);
    list = curl_slist_append(list, auth.c_str());
  }

  std::string method_str(method);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(options_.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(options_.request_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_USERAGENT, options_.user_agent.c_str());
  const std::string& ca_file = options_.ca_file.empty() ? DefaultCaBundle() : options_.ca_file;
  if (!ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &aborted_);
  if (method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_str.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  }

  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(list);
  last_answer_started_ = headers.head_ended;
  if (rc != CURLE_OK) {
    std::string what = error[0] ? error : curl_easy_strerror(rc);
    return Status::Unavailable("http: " + method_str + " " + url + ": " + what);
  }
  if (!headers.head_ended) {
    return Status::Unavailable("http: " + method_str + " " + url +
                               ": the answer ended inside its headers (connection cut)");
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = int(status);
  if (headers.retry_after) {
    response.retry_after_s = ParseRetryAfter(*headers.retry_after, NowMillis());
  }
  return response;
}

}  // namespace cohort::agent
