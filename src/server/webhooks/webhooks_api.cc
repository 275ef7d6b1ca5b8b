#include "server/webhooks/webhooks_api.h"

#include <charconv>

#include "core/clock.h"
#include "server/api/alerts_json.h"
#include "store/webhook_checks.h"

namespace cohort::server::webhooks {
namespace {

namespace bj = boost::json;
using api::AuthContext;

constexpr int64_t kDefaultLogLimit = 100;
constexpr int64_t kMaxLogLimit = 1000;

bj::value Nullable(const std::optional<int64_t>& v) {
  return v ? bj::value(*v) : bj::value(nullptr);
}

bj::value WebhookToJson(const store::WebhookRecord& w) {
  return bj::object{{"id", w.id},
                    {"name", w.name},
                    {"url", w.url},
                    {"format", w.format},
                    {"min_level", w.min_level},
                    {"enabled", w.enabled},
                    {"has_secret", !w.secret.empty()},
                    {"created_ms", w.created_ms}};
}

bj::value DeliveryToJson(const store::DeliveryRecord& d) {
  return bj::object{
      {"id", d.id},
      {"webhook_id", d.webhook_id},
      {"event_id", d.event_id},
      {"alert_id", d.alert_id},
      {"event", d.event_kind},
      {"state", d.state},
      {"attempts", d.attempts},
      {"next_attempt_ms", d.state == "pending" ? bj::value(d.next_attempt_ms) : bj::value(nullptr)},
      {"last_status", Nullable(d.last_status)},
      {"last_error", d.last_error.empty() ? bj::value(nullptr) : bj::value(d.last_error)},
      {"delivered_ms", Nullable(d.delivered_ms)},
      {"created_ms", d.created_ms}};
}

Result<int64_t> WebhookId(const http::HttpRequest& req) {
  std::string s = req.PathParam("id");
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return Status::InvalidArgument("id: expected a webhook id");
  }
  return id;
}

// Reads {"name","url","format","secret","min_level","enabled"} into `w` (checked). `*set_secret`
// tells whether the body has "secret" (null or "" clears it); a new webhook without one has none.
Status ReadWebhook(const http::HttpRequest& req, store::WebhookRecord* w, bool* set_secret) {
  COHORT_ASSIGN_OR_RETURN(bj::object body, api::ParseBodyObject(req));
  json::FieldReader r(body, "");
  r.RejectUnknown({"name", "url", "format", "secret", "min_level", "enabled", "id", "has_secret",
                   "created_ms"});
  w->name = r.String("name", store::kMaxWebhookNameBytes);
  w->url = r.String("url", store::kMaxWebhookUrlBytes);
  std::optional<std::string> format = r.OptString("format", 16);
  std::optional<std::string> level = r.OptString("min_level", 16);
  std::optional<bool> enabled = r.OptBool("enabled");
  const bj::value* secret = body.if_contains("secret");
  *set_secret = secret != nullptr;
  w->secret.clear();
  if (secret != nullptr && !secret->is_null()) {
    if (!secret->is_string()) return Status::InvalidArgument("secret: expected a string or null");
    w->secret = std::string(secret->as_string());
  }
  if (!r.ok()) return r.status();
  w->format = format.value_or("generic");
  w->min_level = level.value_or("INFO");
  w->enabled = enabled.value_or(true);
  return store::ValidateWebhook(*w);
}

// ?limit= of a delivery log: 1..kMaxLogLimit, default kDefaultLogLimit.
Result<int> LogLimit(const http::HttpRequest& req) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> limit, api::IntParam(req, "limit"));
  const int64_t n = limit.value_or(kDefaultLogLimit);
  if (n < 1 || n > kMaxLogLimit) {
    return Status::InvalidArgument("limit: must be 1 to " + std::to_string(kMaxLogLimit));
  }
  return int(n);
}

bj::value DeliveriesToJson(const std::vector<store::DeliveryRecord>& log) {
  bj::array out;
  for (const auto& d : log) out.push_back(DeliveryToJson(d));
  return bj::object{{"deliveries", std::move(out)}};
}

using Handler = std::function<http::HttpResponse(http::HttpRequest&, const store::RunRef&)>;

// An admin-only handler of the project in the path.
http::Handler ProjectHandler(api::ApiContext* ctx, Handler h) {
  return api::Authed(
      ctx,
      [h = std::move(h)](http::HttpRequest& req, const AuthContext& who) {
        auto ref = api::RunRefFromPath(req, who);
        if (!ref.ok()) return api::ErrorResponse(ref.status());
        return h(req, *ref);
      },
      /*admin_only=*/true);
}

}  // namespace

void RegisterWebhookRoutes(http::Router& r, api::ApiContext* ctx, WebhookDispatcher* dispatcher) {
  const std::string base = "/api/v1/alert-webhooks/{entity}/{project}";
  r.Add("GET", base, ProjectHandler(ctx, [ctx](http::HttpRequest&, const store::RunRef& ref) {
          auto hooks = ctx->store->ListWebhooks(ref.entity, ref.project);
          if (!hooks.ok()) return api::ErrorResponse(hooks.status());
          bj::array out;
          for (const auto& w : *hooks) out.push_back(WebhookToJson(w));
          return api::JsonResponse(200, bj::object{{"webhooks", std::move(out)}});
        }));
  r.Add("POST", base, ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          store::WebhookRecord w{.entity = ref.entity, .project = ref.project};
          bool set_secret = false;
          if (Status s = ReadWebhook(req, &w, &set_secret); !s.ok()) {
            return api::FieldErrorResponse(s);
          }
          w.created_ms = NowMillis();
          auto created = ctx->store->CreateWebhook(w);
          if (!created.ok()) return api::FieldErrorResponse(created.status());
          return api::JsonResponse(201, WebhookToJson(*created));
        }));
  r.Add("GET", base + "/{id}",
        ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          auto id = WebhookId(req);
          if (!id.ok()) return api::FieldErrorResponse(id.status());
          auto w = ctx->store->GetWebhook(ref.entity, ref.project, *id);
          if (!w.ok()) return api::ErrorResponse(w.status());
          return api::JsonResponse(200, WebhookToJson(*w));
        }));
  r.Add("PUT", base + "/{id}",
        ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          auto id = WebhookId(req);
          if (!id.ok()) return api::FieldErrorResponse(id.status());
          store::WebhookRecord w{.id = *id, .entity = ref.entity, .project = ref.project};
          bool set_secret = false;
          if (Status s = ReadWebhook(req, &w, &set_secret); !s.ok()) {
            return api::FieldErrorResponse(s);
          }
          auto updated = ctx->store->UpdateWebhook(w, set_secret);
          if (!updated.ok()) return api::FieldErrorResponse(updated.status());
          return api::JsonResponse(200, WebhookToJson(*updated));
        }));
  r.Add("DELETE", base + "/{id}",
        ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          auto id = WebhookId(req);
          if (!id.ok()) return api::FieldErrorResponse(id.status());
          if (Status s = ctx->store->DeleteWebhook(ref.entity, ref.project, *id); !s.ok()) {
            return api::ErrorResponse(s);
          }
          return api::JsonResponse(200, bj::object{{"deleted", true}});
        }));
  r.Add("POST", base + "/{id}/test",
        ProjectHandler(ctx, [ctx, dispatcher](http::HttpRequest& req, const store::RunRef& ref) {
          auto id = WebhookId(req);
          if (!id.ok()) return api::FieldErrorResponse(id.status());
          auto w = ctx->store->GetWebhook(ref.entity, ref.project, *id);
          if (!w.ok()) return api::ErrorResponse(w.status());
          if (dispatcher == nullptr) {
            return api::ErrorResponse(Status::Unavailable("webhooks are not sent by this server"));
          }
          auto sent = dispatcher->SendTest(*w, NowMillis());
          if (!sent.ok()) {
            return api::JsonResponse(
                200,
                bj::object{{"ok", false}, {"status", nullptr}, {"error", sent.status().message()}});
          }
          // The status only: echoing the receiver's answer would let an admin read what the
          // server can reach and they cannot.
          const bool ok = sent->status >= 200 && sent->status < 300;
          return api::JsonResponse(
              200, bj::object{{"ok", ok},
                              {"status", sent->status},
                              {"error", ok ? bj::value(nullptr)
                                           : bj::value("HTTP " + std::to_string(sent->status))}});
        }));
  r.Add("GET", base + "/{id}/deliveries",
        ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          auto id = WebhookId(req);
          if (!id.ok()) return api::FieldErrorResponse(id.status());
          auto limit = LogLimit(req);
          if (!limit.ok()) return api::FieldErrorResponse(limit.status());
          auto log = ctx->store->ListDeliveries(ref.entity, ref.project, *id, *limit);
          if (!log.ok()) return api::ErrorResponse(log.status());
          return api::JsonResponse(200, DeliveriesToJson(*log));
        }));
  // The project's log across its webhooks; ?alert=<id>: one alert's deliveries.
  r.Add("GET", base + "/deliveries",
        ProjectHandler(ctx, [ctx](http::HttpRequest& req, const store::RunRef& ref) {
          auto limit = LogLimit(req);
          if (!limit.ok()) return api::FieldErrorResponse(limit.status());
          auto alert = api::IntParam(req, "alert");
          if (!alert.ok()) return api::FieldErrorResponse(alert.status());
          auto log = ctx->store->ListProjectDeliveries(ref.entity, ref.project, *alert, *limit);
          if (!log.ok()) return api::ErrorResponse(log.status());
          return api::JsonResponse(200, DeliveriesToJson(*log));
        }));
}

}  // namespace cohort::server::webhooks
