// Routes: GET /api/v1/viewer (who am I), GET /api/v1/projects.
#include "server/api/context.h"

namespace cohort::api {

void RegisterViewerRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/viewer", Authed(ctx, [](http::HttpRequest&, const AuthContext& who) {
          return JsonResponse(
              200, bj::object{{"entity", who.entity},
                              {"role", who.role == store::KeyRole::kAdmin ? "admin" : "member"},
                              {"key_name", who.key_name}});
        }));
  r.Add("GET", "/api/v1/projects",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          std::string entity = req.QueryParam("entity", who.entity);
          if (entity != who.entity) return JsonResponse(200, bj::object{{"projects", bj::array{}}});
          auto projects = ctx->store->ListProjects(entity);
          if (!projects.ok()) return ErrorResponse(projects.status());
          bj::array out;
          for (const auto& p : *projects) {
            out.push_back(bj::object{{"entity", p.entity},
                                     {"project", p.project},
                                     {"runs", p.runs},
                                     {"created_ms", p.created_ms},
                                     {"updated_ms", p.updated_ms}});
          }
          return JsonResponse(200, bj::object{{"projects", std::move(out)}});
        }));
}

}  // namespace cohort::api
