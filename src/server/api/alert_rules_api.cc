// Routes: alert rules of a project (docs/api.md, "Alerts") — list (the project's defaults are
// created on first use), create, get, replace, delete. A bad rule is refused with 400 naming the
// field ({"error": {...}, "field": "spec.key"}); a change is seen by this server's rule engine at
// once (and by other servers within AlertEngine::kRulesTtlMs).
#include <charconv>

#include "core/clock.h"
#include "server/alerts/alert_engine.h"
#include "server/api/alerts_json.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

constexpr size_t kMaxRuleNameBytes = 256;

Result<int64_t> RuleId(const http::HttpRequest& req) {
  std::string s = req.PathParam("id");
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return Status::InvalidArgument("id: expected an alert rule id");
  }
  return id;
}

// Reads {"name","kind","spec","level","enabled"} into `rule`, checked (alerts::ParseRuleSpec).
Status ReadRule(const http::HttpRequest& req, store::AlertRule* rule) {
  COHORT_ASSIGN_OR_RETURN(bj::object body, ParseBodyObject(req));
  json::FieldReader r(body, "");
  r.RejectUnknown(
      {"name", "kind", "spec", "level", "enabled", "id", "builtin", "created_ms", "updated_ms"});
  rule->name = r.String("name", kMaxRuleNameBytes);
  rule->kind = r.String("kind", 64);
  const bj::object* spec = r.OptObject("spec");
  std::optional<std::string> level = r.OptString("level", 16);
  std::optional<bool> enabled = r.OptBool("enabled");
  if (!r.ok()) return r.status();
  if (rule->name.empty()) return Status::InvalidArgument("name: must not be empty");
  const bj::object empty;
  alerts::RuleSpec parsed;
  COHORT_RETURN_IF_ERROR(alerts::ParseRuleSpec(rule->kind, spec ? *spec : empty, &parsed));
  rule->level = level.value_or(parsed.kind == alerts::RuleKind::kWriterState ? "ERROR" : "WARN");
  if (!IsAlertLevel(rule->level)) {
    return Status::InvalidArgument("level: expected INFO, WARN or ERROR, got '" + rule->level +
                                   "'");
  }
  rule->enabled = enabled.value_or(true);
  rule->spec_json = bj::serialize(spec ? *spec : empty);
  return Status::Ok();
}

// The project of the path, with its default rules created (through the engine's first use).
Result<store::RunRef> Project(ApiContext* ctx, const http::HttpRequest& req,
                              const AuthContext& who) {
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref, RunRefFromPath(req, who));
  if (ctx->alerts) {
    COHORT_RETURN_IF_ERROR(ctx->alerts->Rules(ref.entity, ref.project, NowMillis()).status());
  }
  return ref;
}

void Changed(ApiContext* ctx, const store::RunRef& ref) {
  if (ctx->alerts) ctx->alerts->Invalidate(ref.entity, ref.project);
}

}  // namespace

void RegisterAlertRuleRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/alert-rules/{entity}/{project}";
  r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = Project(ctx, req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto rules = ctx->store->ListAlertRules(ref->entity, ref->project);
          if (!rules.ok()) return ErrorResponse(rules.status());
          bj::array out;
          for (const auto& rule : *rules) out.push_back(AlertRuleToJson(rule));
          return JsonResponse(200, bj::object{{"rules", std::move(out)}});
        }));
  r.Add("POST", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = Project(ctx, req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          store::AlertRule rule{.entity = ref->entity, .project = ref->project};
          if (Status s = ReadRule(req, &rule); !s.ok()) return FieldErrorResponse(s);
          rule.created_ms = rule.updated_ms = NowMillis();
          auto created = ctx->store->CreateAlertRule(rule);
          if (!created.ok()) return ErrorResponse(created.status());
          Changed(ctx, *ref);
          return JsonResponse(201, AlertRuleToJson(*created));
        }));
  r.Add("GET", base + "/{id}", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = Project(ctx, req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto id = RuleId(req);
          if (!id.ok()) return FieldErrorResponse(id.status());
          auto rule = ctx->store->GetAlertRule(ref->entity, ref->project, *id);
          if (!rule.ok()) return ErrorResponse(rule.status());
          return JsonResponse(200, AlertRuleToJson(*rule));
        }));
  r.Add("PUT", base + "/{id}", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = Project(ctx, req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto id = RuleId(req);
          if (!id.ok()) return FieldErrorResponse(id.status());
          store::AlertRule rule{.id = *id, .entity = ref->entity, .project = ref->project};
          if (Status s = ReadRule(req, &rule); !s.ok()) return FieldErrorResponse(s);
          rule.updated_ms = NowMillis();
          auto updated = ctx->store->UpdateAlertRule(rule);
          if (!updated.ok()) return ErrorResponse(updated.status());
          Changed(ctx, *ref);
          return JsonResponse(200, AlertRuleToJson(*updated));
        }));
  r.Add("DELETE", base + "/{id}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = Project(ctx, req, who);
          if (!ref.ok()) return FieldErrorResponse(ref.status());
          auto id = RuleId(req);
          if (!id.ok()) return FieldErrorResponse(id.status());
          if (Status s = ctx->store->DeleteAlertRule(ref->entity, ref->project, *id); !s.ok()) {
            return ErrorResponse(s);
          }
          Changed(ctx, *ref);
          return JsonResponse(200, bj::object{{"deleted", true}});
        }));
}

}  // namespace cohort::api
