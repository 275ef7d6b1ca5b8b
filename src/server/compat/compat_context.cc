#include "server/compat/compat_context.h"

#include <cstdio>
#include <ctime>

#include "core/ids.h"
#include "core/text_encoding.h"
#include "server/compat/wandb_lines.h"

namespace cohort::compat {
namespace {

bool IsClientIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_';
}

}  // namespace

ClientId ClientFromRequest(const http::HttpRequest& req) {
  std::string_view id = req.Header("x-wandb-async-client-id");
  if (id.empty()) id = req.Header("x-wandb-client-id");
  ClientId out;
  if (id.empty()) return out;
  std::string key;
  for (char c : id) {
    if (IsClientIdChar(c)) key.push_back(c);
  }
  if (key.size() > 64) key = key.substr(key.size() - 64);
  if (key.empty() || key == "default") return out;
  out.key = std::move(key);
  out.shared = true;
  return out;
}

std::string BaseUrl(const http::HttpRequest& req) {
  std::string_view proto = req.Header("x-forwarded-proto");
  std::string_view host = req.Header("x-forwarded-host");
  if (host.empty()) host = req.Header("host");
  std::string scheme = proto == "https" ? "https" : "http";
  std::string h;
  for (char c : host) {  // a Host header is a host name or address with a port
    if (IsClientIdChar(c) || c == '.' || c == ':' || c == '[' || c == ']') h.push_back(c);
  }
  if (h.empty()) h = "127.0.0.1";
  return scheme + "://" + h;
}

Result<store::RunRef> CompatRunRef(const api::AuthContext& who, std::string_view entity,
                                   std::string_view project, std::string_view run) {
  store::RunRef ref;
  ref.entity = entity.empty() ? who.entity : std::string(entity);
  ref.project = project.empty() ? "uncategorized" : std::string(project);
  ref.run_id = std::string(run);
  if (ref.entity != who.entity) {
    return Status::NotFound("entity '" + ref.entity + "' not found (this API key belongs to '" +
                            who.entity + "')");
  }
  COHORT_RETURN_IF_ERROR(ids::CheckProjectName(ref.project));
  if (!run.empty() && !ids::IsValidId(ref.run_id)) {
    return Status::InvalidArgument("run: invalid id '" + ref.run_id +
                                   "' (1-64 characters of letters, digits, '_', '-', '.')");
  }
  return ref;
}

Result<store::RunRecord> EnsureRun(store::Store* store, const store::RunRef& ref) {
  auto run = store->GetRun(ref);
  if (run.ok() || run.status().code() != StatusCode::kNotFound) return run;
  store::RunUpsert u;
  u.ref = ref;
  COHORT_ASSIGN_OR_RETURN(auto created, store->UpsertRun(u));
  return created.first;
}

http::Handler Guarded(std::string what, http::Handler h) {
  return [what = std::move(what), h = std::move(h)](http::HttpRequest& req) {
    try {
      return h(req);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cohort: compat %s: %s\n", what.c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "cohort: compat %s: unknown exception\n", what.c_str());
    }
    return http::HttpResponse::Json(500, "{\"errors\":[{\"message\":\"internal error\"}]}");
  };
}

http::HttpResponse Backpressure(int retry_after_s, std::string_view message) {
  auto resp = http::HttpResponse::Error(429, "resource_exhausted", message);
  std::string s = std::to_string(retry_after_s);
  resp.headers.emplace_back("Retry-After", s);
  resp.headers.emplace_back("RateLimit-Remaining", "0");
  resp.headers.emplace_back("RateLimit-Reset", s);
  return resp;
}

std::string BucketId(const store::RunRef& ref) {
  return Base64Encode("Run:v1:" + ref.run_id + ":" + ref.project + ":" + ref.entity);
}

bool ParseBucketId(std::string_view id, store::RunRef* out) {
  std::string text = Base64Decode(id);
  if (!text.starts_with("Run:v1:")) return false;
  std::string_view rest = std::string_view(text).substr(7);
  size_t a = rest.find(':');
  if (a == std::string_view::npos) return false;
  size_t b = rest.find(':', a + 1);
  if (b == std::string_view::npos) return false;
  out->run_id = std::string(rest.substr(0, a));
  out->project = std::string(rest.substr(a + 1, b - a - 1));
  out->entity = std::string(rest.substr(b + 1));
  return ids::IsValidId(out->run_id);
}

void DeepMerge(bj::object* base, const bj::object& patch, int depth) {
  for (const auto& kv : patch) {
    bj::value* existing = base->if_contains(kv.key());
    if (depth > 0 && existing && existing->is_object() && kv.value().is_object()) {
      DeepMerge(&existing->get_object(), kv.value().get_object(), depth - 1);
    } else {
      (*base)[kv.key()] = kv.value();
    }
  }
}

std::string IsoTime(int64_t ms) {
  std::time_t secs = std::time_t(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cohort::compat
