// Routes of browser sessions (api/auth.h):
//   POST   /api/v1/login-tokens  {}        a one-time login token for the caller's API key
//   POST   /api/v1/sessions      {"token"} uses up a login token, answers a session key
//   DELETE /api/v1/sessions                ends the caller's session (logout)
#include "core/clock.h"
#include "server/api/context.h"

namespace cohort::api {

void RegisterSessionRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("POST", "/api/v1/login-tokens",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto body = ParseBodyObject(req);
          if (!body.ok()) return ErrorResponse(body.status());
          json::FieldReader rd(*body, "");
          rd.RejectUnknown({});
          if (!rd.ok()) return ErrorResponse(rd.status());
          if (who.session) {
            return ErrorResponse(Status::PermissionDenied(
                "a browser session cannot make login links; use an API key"));
          }
          const int64_t now = NowMillis();
          auto token = ctx->auth->CreateLoginToken(who.key_id);
          if (!token.ok()) return ErrorResponse(token.status());
          const int64_t lifetime_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(kLoginTokenLifetime).count();
          return JsonResponse(201, bj::object{{"token", *token},
                                              {"path", "/?token=" + *token},
                                              {"expires_ms", now + lifetime_ms}});
        }));
  r.Add("POST", "/api/v1/sessions", [ctx](http::HttpRequest& req) {
    auto body = ParseBodyObject(req);
    if (!body.ok()) return ErrorResponse(body.status());
    json::FieldReader rd(*body, "");
    rd.RejectUnknown({"token"});
    std::string token = rd.String("token", 256);
    if (!rd.ok()) return ErrorResponse(rd.status());
    auto secret = ctx->auth->OpenSession(token);
    if (!secret.ok()) {
      ctx->metrics->AddRejected("bad_ui_token");
      return ErrorResponse(secret.status());
    }
    const int64_t lifetime_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(kSessionLifetime).count();
    return JsonResponse(201,
                        bj::object{{"key", *secret}, {"expires_ms", NowMillis() + lifetime_ms}});
  });
  r.Add("DELETE", "/api/v1/sessions", [ctx](http::HttpRequest& req) {
    if (Status s = ctx->auth->CloseSession(req); !s.ok()) return ErrorResponse(s);
    return JsonResponse(200, bj::object{{"ended", true}});
  });
}

}  // namespace cohort::api
