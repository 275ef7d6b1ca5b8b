// Routes: GET /api/v1/groups/{entity}/{project} — groups with per-group counts and states.
#include "server/api/context.h"

namespace cohort::api {

void RegisterGroupRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/groups/{entity}/{project}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto groups = ctx->store->ListGroups(ref->entity, ref->project);
          if (!groups.ok()) return ErrorResponse(groups.status());
          bj::array out;
          for (const auto& g : *groups) {
            bj::object states, job_types;
            for (const auto& [k, v] : g.states) states[k] = v;
            for (const auto& [k, v] : g.job_types) job_types[k] = v;
            out.push_back(bj::object{{"group", g.group},
                                     {"runs", g.runs},
                                     {"states", std::move(states)},
                                     {"job_types", std::move(job_types)},
                                     {"created_ms", g.created_ms},
                                     {"updated_ms", g.updated_ms}});
          }
          return JsonResponse(200, bj::object{{"groups", std::move(out)}});
        }));
}

}  // namespace cohort::api
