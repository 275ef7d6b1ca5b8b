#include "cli/read_client.h"

#include <cstdlib>

#include "core/json.h"
#include "core/text_encoding.h"
#include "core/user_config.h"
#include "core/version.h"

namespace cohort::cli {
namespace bj = boost::json;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Status StatusFor(int http_status, const std::string& body, std::string_view what) {
  std::string message;
  auto parsed = json::Parse(body);
  if (parsed.ok() && parsed->is_object()) {
    if (const bj::value* err = parsed->as_object().if_contains("error"); err && err->is_object()) {
      message = StrField(*err, "message");
    }
  }
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  std::string text = std::string(what) + ": " + message;
  switch (http_status) {
    case 400:
      return Status::InvalidArgument(text);
    case 401:
      return Status::Unauthenticated(text + " (check COHORT_API_KEY or run `cohort login`)");
    case 403:
      return Status::PermissionDenied(text);
    case 404:
      return Status::NotFound(text);
    case 409:
      return Status::FailedPrecondition(text);
    case 413:
      return Status::PayloadTooLarge(text);
    case 416:
    case 422:
      return Status::InvalidArgument(text);
    case 429:
      return Status::ResourceExhausted(text);
    default:
      return http_status >= 500 ? Status::Unavailable(text) : Status::Internal(text);
  }
}

}  // namespace

std::string WithQuery(std::string_view path, const Query& query) {
  std::string target(path);
  char sep = '?';
  for (const auto& [name, value] : query) {
    if (value.empty()) continue;
    target += sep;
    target += name;
    target += '=';
    target += PercentEncode(value);
    sep = '&';
  }
  return target;
}

std::string RunPath::ApiPath() const {
  return "/api/v1/runs/" + PercentEncode(entity) + "/" + PercentEncode(project) + "/" +
         PercentEncode(run_id);
}

ReadClient::ReadClient(std::string base_url, std::string api_key)
    : http_(std::move(base_url),
            agent::HttpClientOptions{5.0, 120.0, "cohort-cli/" + std::string(kVersion), ""}),
      api_key_(std::move(api_key)) {}

Result<std::unique_ptr<ReadClient>> ReadClient::Open() {
  std::string url = Env("COHORT_BASE_URL"), key = Env("COHORT_API_KEY");
  if (url.empty() || key.empty()) {
    COHORT_ASSIGN_OR_RETURN(UserConfig file, LoadUserConfig());
    if (url.empty()) url = file.base_url;
    if (key.empty()) key = file.api_key;
  }
  if (url.empty()) url = "http://127.0.0.1:8787";
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  if (key.empty()) {
    return Status::Unauthenticated(
        "no API key: set COHORT_API_KEY or run `cohort login` (config: " + UserConfigPath() + ")");
  }
  return std::unique_ptr<ReadClient>(new ReadClient(std::move(url), std::move(key)));
}

std::unique_ptr<ReadClient> ReadClient::To(std::string base_url, std::string api_key) {
  return std::unique_ptr<ReadClient>(new ReadClient(std::move(base_url), std::move(api_key)));
}

Status ReadClient::TransferError(std::string_view method, const Status& failed) const {
  if (http_.last_answer_started()) {
    // The server answered, then the connection broke (it lost its blob store mid-download, or
    // the network did).
    return Status::Unavailable((method == "GET" ? "the download from " : "the answer from ") +
                               http_.base_url() + " was cut off: " + failed.message() +
                               "; run it again to continue");
  }
  return Status::Unavailable("cannot reach the server at " + http_.base_url() + ": " +
                             failed.message());
}

Result<bj::value> ReadClient::Get(std::string_view path, const Query& query) {
  auto res = http_.Request("GET", WithQuery(path, query), "", api_key_);
  if (!res.ok()) return TransferError("GET", res.status());
  if (res->status < 200 || res->status >= 300) {
    return StatusFor(res->status, res->body, "GET " + std::string(path));
  }
  auto parsed = json::Parse(res->body);
  if (!parsed.ok()) {
    return Status::Internal("GET " + std::string(path) +
                            ": the server's answer is not JSON: " + parsed.status().message());
  }
  return std::move(*parsed);
}

Result<bj::value> ReadClient::Post(std::string_view path, const bj::object& body) {
  return SendJson("POST", path, body);
}

Result<agent::HttpResponse> ReadClient::Send(std::string_view method, std::string_view path,
                                             std::string_view body, std::string_view content_type,
                                             std::string_view extra_header) {
  auto res = http_.Request(method, path, body, api_key_, content_type, extra_header);
  if (!res.ok()) return TransferError(method, res.status());
  if (res->status < 200 || res->status >= 300) {
    return StatusFor(res->status, res->body, std::string(method) + " " + std::string(path));
  }
  return std::move(*res);
}

Result<bj::value> ReadClient::SendJson(std::string_view method, std::string_view path,
                                       const bj::object& body) {
  COHORT_ASSIGN_OR_RETURN(agent::HttpResponse res, Send(method, path, bj::serialize(body)));
  auto parsed = json::Parse(res.body);
  if (!parsed.ok()) {
    return Status::Internal(std::string(method) + " " + std::string(path) +
                            ": the server's answer is not JSON: " + parsed.status().message());
  }
  return std::move(*parsed);
}

Result<std::string> ReadClient::Entity() {
  if (entity_.empty()) {
    COHORT_ASSIGN_OR_RETURN(bj::value me, Get("/api/v1/viewer"));
    entity_ = StrField(me, "entity");
    if (entity_.empty()) return Status::Internal("/api/v1/viewer: no entity in the answer");
  }
  return entity_;
}

Result<RunPath> ReadClient::ParseRun(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t slash = text.find('/', start);
    parts.emplace_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  bool empty_part = false;
  for (const auto& p : parts) empty_part = empty_part || p.empty();
  if (empty_part || parts.size() < 2 || parts.size() > 3) {
    return Status::InvalidArgument("RUN: expected entity/project/run_id or project/run_id, got '" +
                                   std::string(text) + "'");
  }
  RunPath r;
  if (parts.size() == 2) {
    COHORT_ASSIGN_OR_RETURN(r.entity, Entity());
    r.project = parts[0];
    r.run_id = parts[1];
  } else {
    r.entity = parts[0];
    r.project = parts[1];
    r.run_id = parts[2];
  }
  return r;
}

std::string StrField(const bj::value& v, std::string_view key) {
  if (!v.is_object()) return "";
  const bj::value* f = v.as_object().if_contains(key);
  return f && f->is_string() ? std::string(f->get_string()) : std::string();
}

int64_t IntField(const bj::value& v, std::string_view key, int64_t def) {
  if (!v.is_object()) return def;
  const bj::value* f = v.as_object().if_contains(key);
  if (!f) return def;
  if (f->is_int64()) return f->get_int64();
  if (f->is_uint64()) return int64_t(f->get_uint64());
  if (f->is_double()) return int64_t(f->get_double());
  return def;
}

}  // namespace cohort::cli
