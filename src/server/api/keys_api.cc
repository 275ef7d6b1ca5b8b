// Routes: API keys of the caller's entity (admin keys only, not browser sessions) — list,
// create, revoke.
#include <charconv>

#include "core/clock.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

// A browser session must not outlive itself by making keys (nor list or revoke them).
Status RefuseSessions(const AuthContext& who) {
  if (!who.session) return Status::Ok();
  return Status::PermissionDenied("API keys are managed with an API key, not a browser session");
}

}  // namespace

void RegisterKeyRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/keys",
        Authed(
            ctx,
            [ctx](http::HttpRequest&, const AuthContext& who) {
              if (Status s = RefuseSessions(who); !s.ok()) return ErrorResponse(s);
              auto keys = ctx->store->ListApiKeys(who.entity);
              if (!keys.ok()) return ErrorResponse(keys.status());
              bj::array out;
              for (const auto& k : *keys) {
                out.push_back(bj::object{
                    {"id", k.id},
                    {"name", k.name},
                    {"role", k.role == store::KeyRole::kAdmin ? "admin" : "member"},
                    {"prefix", k.prefix},
                    {"created_ms", k.created_ms},
                    {"revoked", k.revoked}});
              }
              return JsonResponse(200, bj::object{{"keys", std::move(out)}});
            },
            /*admin_only=*/true));
  r.Add("POST", "/api/v1/keys",
        Authed(
            ctx,
            [ctx](http::HttpRequest& req, const AuthContext& who) {
              if (Status s = RefuseSessions(who); !s.ok()) return ErrorResponse(s);
              auto body = ParseBodyObject(req);
              if (!body.ok()) return ErrorResponse(body.status());
              json::FieldReader rd(*body, "");
              rd.RejectUnknown({"name", "role"});
              std::string name = rd.OptString("name", 128).value_or("key");
              std::string role = rd.OptString("role", 16).value_or("member");
              if (!rd.ok()) return ErrorResponse(rd.status());
              if (role != "admin" && role != "member") {
                return ErrorResponse(Status::InvalidArgument("role: expected admin or member"));
              }
              std::string secret = NewApiKeySecret();
              store::ApiKeyRecord rec;
              rec.entity = who.entity;
              rec.name = name;
              rec.role = role == "admin" ? store::KeyRole::kAdmin : store::KeyRole::kMember;
              rec.hash = HashApiKey(secret);
              rec.prefix = secret.substr(0, 7);
              rec.created_ms = NowMillis();
              auto created = ctx->store->CreateApiKey(rec);
              if (!created.ok()) return ErrorResponse(created.status());
              return JsonResponse(201, bj::object{{"id", created->id},
                                                  {"name", created->name},
                                                  {"role", role},
                                                  {"key", secret}});
            },
            /*admin_only=*/true));
  r.Add("DELETE", "/api/v1/keys/{id}",
        Authed(
            ctx,
            [ctx](http::HttpRequest& req, const AuthContext& who) {
              if (Status refused = RefuseSessions(who); !refused.ok()) {
                return ErrorResponse(refused);
              }
              std::string s = req.PathParam("id");
              int64_t id = 0;
              auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
              if (ec != std::errc() || p != s.data() + s.size()) {
                return ErrorResponse(Status::InvalidArgument("id: expected a key id"));
              }
              if (Status st = ctx->store->RevokeApiKey(who.entity, id); !st.ok()) {
                return ErrorResponse(st);
              }
              ctx->auth->Invalidate();
              return JsonResponse(200, bj::object{{"revoked", true}});
            },
            /*admin_only=*/true));
}

}  // namespace cohort::api
