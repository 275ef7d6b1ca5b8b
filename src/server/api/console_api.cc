// Route: GET .../{run}/console — console lines filtered by label, stream and text, paged.
#include "server/api/console_filter.h"

namespace cohort::api {

void RegisterConsoleRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/console",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto filter = ConsoleFilterFromRequest(req, who);
          if (!filter.ok()) return ErrorResponse(filter.status());
          store::ConsoleQuery q = std::move(*filter);
          auto limit = IntParam(req, "limit");
          if (!limit.ok()) return ErrorResponse(limit.status());
          q.limit = int(std::clamp<int64_t>(limit->value_or(1000), 1, 10000));
          auto lines = ctx->store->QueryConsole(q);
          if (!lines.ok()) return ErrorResponse(lines.status());
          bj::array out;
          out.reserve(lines->size());
          for (const auto& l : *lines) {
            out.push_back(bj::object{{"id", l.id},
                                     {"label", l.label},
                                     {"stream", l.stream},
                                     {"time", l.time_ms},
                                     {"text", l.text}});
          }
          bj::value next = nullptr;
          if (int(lines->size()) == q.limit) next = lines->back().id;
          return JsonResponse(200, bj::object{{"lines", std::move(out)}, {"next_cursor", next}});
        }));
}

}  // namespace cohort::api
