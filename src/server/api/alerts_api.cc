// Routes: alerts (docs/api.md, "Alerts") — alerts raised by code (run.alert through the agent),
// the alerts list with filters, one alert, acknowledging one. Rules: alert_rules_api.cc.
#include <algorithm>
#include <charconv>

#include "core/clock.h"
#include "core/limits.h"
#include "server/api/alerts_json.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

Result<int64_t> AlertId(const http::HttpRequest& req) {
  std::string s = req.PathParam("id");
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return Status::InvalidArgument("id: expected an alert id");
  }
  return id;
}

// POST .../writers/{label}/alerts: {"title", "text", "level", "time_ms"}.
http::HttpResponse RaiseFromCode(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return FieldErrorResponse(ref.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return FieldErrorResponse(body.status());
  json::FieldReader r(*body, "");
  r.RejectUnknown({"title", "text", "level", "time_ms"});
  std::string title = r.String("title", limits::kMaxAlertTitleBytes);
  std::string text = r.OptString("text", limits::kMaxAlertTextBytes).value_or("");
  std::string level = r.OptString("level", 16).value_or("INFO");
  std::optional<int64_t> time_ms = r.OptInt("time_ms");
  if (!r.ok()) return FieldErrorResponse(r.status());
  if (title.empty()) return FieldErrorResponse(Status::InvalidArgument("title: must not be empty"));
  if (!IsAlertLevel(level)) {
    return FieldErrorResponse(
        Status::InvalidArgument("level: expected INFO, WARN or ERROR, got '" + level + "'"));
  }
  const std::string label = req.PathParam("label");
  if (Status s = CheckWriterLabel(label, ctx->limits); !s.ok()) return FieldErrorResponse(s);
  // A code alert ends with its writer (docs/api.md, "Alerts"): one of a writer that never joined
  // would stay open for ever.
  auto writers = ctx->store->ListWriters(*ref);
  if (!writers.ok()) return ErrorResponse(writers.status());
  if (std::none_of(writers->begin(), writers->end(),
                   [&](const store::WriterRecord& w) { return w.label == label; })) {
    return FieldErrorResponse(
        Status::NotFound("label: no writer '" + label + "' joined run '" + ref->run_id + "'"));
  }
  const int64_t now = NowMillis();
  // The client's time of the call identifies it: a post retried after a lost answer carries the
  // same and bumps the alert it opened (store.h RaiseAlert); without one, the server's time.
  bj::object evidence{{"time_ms", time_ms.value_or(now)}};
  store::AlertRaise raise{.entity = ref->entity,
                          .project = ref->project,
                          .run_id = ref->run_id,
                          .writer_label = label,
                          .rule_id = std::nullopt,
                          .source = "code",
                          .condition_key = "code:" + title,
                          .level = level,
                          .title = title,
                          .text = text,
                          .evidence_json = bj::serialize(evidence),
                          .now_ms = now};
  auto raised = ctx->store->RaiseAlert(raise);
  if (!raised.ok()) return ErrorResponse(raised.status());
  return JsonResponse(
      200, bj::object{{"alert", AlertToJson(raised->first)}, {"opened", raised->second}});
}

http::HttpResponse List(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return FieldErrorResponse(ref.status());
  store::AlertQuery q{.entity = ref->entity, .project = ref->project};
  if (req.HasQueryParam("state")) {
    std::string state = req.QueryParam("state");
    if (state != "open" && state != "resolved") {
      return FieldErrorResponse(
          Status::InvalidArgument("state: expected open or resolved, got '" + state + "'"));
    }
    q.state = state;
  }
  if (req.HasQueryParam("level")) {
    std::string level = req.QueryParam("level");
    if (!IsAlertLevel(level)) {
      return FieldErrorResponse(
          Status::InvalidArgument("level: expected INFO, WARN or ERROR, got '" + level + "'"));
    }
    q.level = level;
  }
  if (req.HasQueryParam("run")) q.run_id = req.QueryParam("run");
  auto limit = IntParam(req, "limit");
  if (!limit.ok()) return FieldErrorResponse(limit.status());
  if (*limit) {
    if (**limit < 1 || **limit > 1000) {
      return FieldErrorResponse(Status::InvalidArgument("limit: expected 1..1000"));
    }
    q.limit = int(**limit);
  }
  auto alerts = ctx->store->ListAlerts(q);
  if (!alerts.ok()) return ErrorResponse(alerts.status());
  bj::array out;
  for (const auto& a : *alerts) out.push_back(AlertToJson(a));
  return JsonResponse(200, bj::object{{"alerts", std::move(out)}});
}

}  // namespace

void RegisterAlertRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/alerts",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return RaiseFromCode(ctx, req, who);
        }));
  const std::string base = "/api/v1/alerts/{entity}/{project}";
  r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return List(ctx, req, who);
        }));
  r.Add("GET", base + "/{id}", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto id = AlertId(req);
          if (!id.ok()) return FieldErrorResponse(id.status());
          auto a = ctx->store->GetAlert(ref->entity, ref->project, *id);
          if (!a.ok()) return ErrorResponse(a.status());
          return JsonResponse(200, AlertToJson(*a));
        }));
  r.Add("POST", base + "/{id}/ack",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto id = AlertId(req);
          if (!id.ok()) return FieldErrorResponse(id.status());
          std::string by =
              who.key_name.empty() ? "key " + std::to_string(who.key_id) : who.key_name;
          auto a = ctx->store->AckAlert(ref->entity, ref->project, *id, by, NowMillis());
          if (!a.ok()) return ErrorResponse(a.status());
          return JsonResponse(200, AlertToJson(*a));
        }));
}

}  // namespace cohort::api
