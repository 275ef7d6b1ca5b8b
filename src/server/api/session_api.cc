// Route: POST /api/v1/sessions {"token"} — exchanges the UI token that `cohort server` prints
// (in its "open" link) for a browser session key, so the local user never pastes a key.
#include "server/api/context.h"

namespace cohort::api {

void RegisterSessionRoutes(http::Router& r, ApiContext* ctx) {
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
    return JsonResponse(201, bj::object{{"key", *secret}});
  });
}

}  // namespace cohort::api
