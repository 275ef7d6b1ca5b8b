// Route: GET .../{run}/console — console lines filtered by label, stream and text, paged.
#include "server/api/context.h"

namespace cohort::api {

void RegisterConsoleRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/console",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::ConsoleQuery q;
          q.run = *ref;
          q.labels = SplitCsv(req.QueryParam("labels", req.QueryParam("label")));
          q.stream = req.QueryParam("stream");
          if (!q.stream.empty() && q.stream != "stdout" && q.stream != "stderr") {
            return ErrorResponse(Status::InvalidArgument("stream: expected stdout or stderr"));
          }
          q.text = req.QueryParam("q");
          auto after = IntParam(req, "after");
          auto limit = IntParam(req, "limit");
          if (!after.ok()) return ErrorResponse(after.status());
          if (!limit.ok()) return ErrorResponse(limit.status());
          q.after_id = after->value_or(0);
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
