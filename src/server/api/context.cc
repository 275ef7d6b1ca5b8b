#include "server/api/context.h"

#include <charconv>

#include "core/clock.h"
#include "core/ids.h"
#include "core/utf8.h"
#include "server/api/throttle.h"

namespace cohort::api {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kFailedPrecondition: return 409;
    case StatusCode::kPayloadTooLarge: return 413;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kCorruption:
    case StatusCode::kIOError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

http::HttpResponse ErrorResponse(const Status& s) {
  auto resp = http::HttpResponse::Error(HttpStatusFor(s.code()), StatusCodeName(s.code()),
                                        s.message());
  if (s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kUnavailable) {
    resp.headers.emplace_back("Retry-After", "1");
  }
  return resp;
}

Status CheckArtifactFileSize(const ApiLimits& limits, std::string_view what, uint64_t size) {
  if (size <= limits.max_artifact_file_bytes) return Status::Ok();
  return Status::PayloadTooLarge(std::string(what) + " has " + std::to_string(size) +
                                 " bytes, over this server's limit of " +
                                 std::to_string(limits.max_artifact_file_bytes) +
                                 " bytes per artifact file (--max-artifact-file-bytes)");
}

Status CheckWriterLabel(const std::string& label, const ApiLimits& limits) {
  if (label.empty()) return Status::InvalidArgument("label: required");
  if (label.size() > limits.max_label_bytes) {
    return Status::InvalidArgument("label: longer than " + std::to_string(limits.max_label_bytes) +
                                   " bytes");
  }
  for (char c : label) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '/') {
      return Status::InvalidArgument("label: control characters and '/' are not allowed");
    }
  }
  return Status::Ok();
}

http::HttpResponse JsonResponse(int status, const bj::value& v) {
  return http::HttpResponse::Json(status, bj::serialize(v));
}

namespace {

http::Handler AuthedHandlerOf(ApiContext* ctx, AuthedHandler h, bool admin_only, bool charge) {
  return [ctx, h = std::move(h), admin_only, charge](http::HttpRequest& req) {
    auto who = ctx->auth->Authenticate(req);
    if (!who.ok()) {
      if (ctx->metrics) ctx->metrics->AddRejected("unauthenticated");
      return ErrorResponse(who.status());
    }
    if (admin_only && who->role != store::KeyRole::kAdmin) {
      return ErrorResponse(Status::PermissionDenied(
          req.method + " " + req.path + " needs an admin key; key '" + who->key_name +
          "' is a member key (an admin key of entity '" + who->entity +
          "' can do it, or make one: cohort keys create --entity " + who->entity +
          " --role admin)"));
    }
    if (charge) {
      if (auto refused = ThrottleRequest(ctx, who->entity)) return std::move(*refused);
    }
    return h(req, *who);
  };
}

}  // namespace

http::Handler Authed(ApiContext* ctx, AuthedHandler h, bool admin_only) {
  return AuthedHandlerOf(ctx, std::move(h), admin_only, true);
}

http::Handler AuthedChargedByHandler(ApiContext* ctx, AuthedHandler h) {
  return AuthedHandlerOf(ctx, std::move(h), false, false);
}

Result<store::RunRef> RunRefFromPath(const http::HttpRequest& req, const AuthContext& who) {
  store::RunRef ref{req.PathParam("entity"), req.PathParam("project"), req.PathParam("run")};
  if (!ids::IsValidId(ref.entity)) return Status::InvalidArgument("entity: invalid name");
  COHORT_RETURN_IF_ERROR(ids::CheckProjectName(ref.project));
  if (req.path_params.count("run") && !ids::IsValidId(ref.run_id)) {
    return Status::InvalidArgument("run: invalid id");
  }
  if (ref.entity != who.entity) {
    return Status::NotFound("entity '" + ref.entity + "' not found");
  }
  return ref;
}

Result<bj::object> ParseBodyObject(const http::HttpRequest& req) {
  if (req.body.empty()) return bj::object{};
  COHORT_ASSIGN_OR_RETURN(bj::value v, json::Parse(req.body));
  if (!v.is_object()) return Status::InvalidArgument("body: expected a JSON object");
  return std::move(v.as_object());
}

std::string ShownValue(std::string_view v) {
  constexpr size_t kShown = 64;
  std::string out;
  utf8::AppendSanitized(v, kShown, &out);
  if (v.size() > kShown) out += "...";
  return out;
}

Result<std::optional<int64_t>> IntParam(const http::HttpRequest& req, std::string_view name) {
  if (!req.HasQueryParam(name)) return std::optional<int64_t>{};
  std::string v = req.QueryParam(name);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) {
    return Status::InvalidArgument(std::string(name) + ": expected an integer, got '" +
                                   ShownValue(v) + "'");
  }
  return std::optional<int64_t>{out};
}

bj::value ParseStoredJson(const std::string& text) {
  auto v = json::Parse(text);
  if (!v.ok()) return bj::object{};
  return std::move(v).value();
}

namespace {
bj::value OptInt(const std::optional<int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); }
bj::value OptInt(const std::optional<int>& v) { return v ? bj::value(*v) : bj::value(nullptr); }
}  // namespace

bj::value RunToJson(const store::RunRecord& r, int64_t now_ms) {
  bj::array tags;
  for (const auto& t : r.tags) tags.emplace_back(t);
  int64_t end = r.finished_ms.value_or(store::IsTerminal(r.state) ? r.updated_ms : now_ms);
  return bj::object{
      {"id", r.run_id},
      {"entity", r.entity},
      {"project", r.project},
      {"name", r.name},
      {"group", r.group},
      {"job_type", r.job_type},
      {"tags", std::move(tags)},
      {"notes", r.notes},
      {"host", r.host},
      {"config", ParseStoredJson(r.config_json)},
      {"summary", ParseStoredJson(r.summary_json)},
      {"metadata", ParseStoredJson(r.metadata_json)},
      {"state", store::RunStateName(r.state)},
      {"exit_code", OptInt(r.exit_code)},
      {"created_ms", r.created_ms},
      {"updated_ms", r.updated_ms},
      {"heartbeat_ms", r.heartbeat_ms},
      {"finished_ms", OptInt(r.finished_ms)},
      {"runtime_ms", std::max<int64_t>(0, end - r.created_ms)},
      {"writer_count", r.writer_count},
  };
}

bj::value WriterToJson(const store::WriterRecord& w) {
  bj::array gpus;
  for (auto g : w.gpu_ids) gpus.emplace_back(g);
  return bj::object{
      {"label", w.label},
      {"primary", w.primary},
      {"update_finish_state", w.update_finish_state},
      {"host", w.host},
      {"pid", w.pid},
      {"gpu_ids", std::move(gpus)},
      {"state", store::RunStateName(w.state)},
      {"exit_code", OptInt(w.exit_code)},
      {"created_ms", w.created_ms},
      {"heartbeat_ms", w.heartbeat_ms},
      {"finished_ms", OptInt(w.finished_ms)},
      {"next_step", w.next_step},
      {"last_seq", w.last_seq},
  };
}

void RegisterApiRoutes(http::Router& r, ApiContext* ctx) {
  RegisterHealthRoutes(r, ctx);
  RegisterViewerRoutes(r, ctx);
  RegisterRunRoutes(r, ctx);
  RegisterGroupRoutes(r, ctx);
  RegisterWriterRoutes(r, ctx);
  RegisterIngestRoutes(r, ctx);
  RegisterHistoryRoutes(r, ctx);
  RegisterHistogramRoutes(r, ctx);
  RegisterMediaRoutes(r, ctx);
  RegisterConsoleRoutes(r, ctx);
  RegisterViewRoutes(r, ctx);
  RegisterKeyRoutes(r, ctx);
  RegisterSessionRoutes(r, ctx);
  RegisterConsoleIndexRoutes(r, ctx);
  RegisterRanksRoutes(r, ctx);
  RegisterBlobRoutes(r, ctx);
  RegisterArtifactRoutes(r, ctx);
  RegisterAlertRoutes(r, ctx);
  RegisterAlertRuleRoutes(r, ctx);
  // Unknown API paths answer JSON 404 even when the web UI's catch-all serves other paths.
  r.Add("GET", "/api/{rest...}", [](http::HttpRequest& req) {
    return ErrorResponse(Status::NotFound("no API route " + req.path));
  });
}

}  // namespace cohort::api
