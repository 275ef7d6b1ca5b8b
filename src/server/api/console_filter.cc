#include "server/api/console_filter.h"

namespace cohort::api {

Result<store::ConsoleQuery> ConsoleFilterFromRequest(const http::HttpRequest& req,
                                                     const AuthContext& who) {
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref, RunRefFromPath(req, who));
  store::ConsoleQuery q;
  q.run = std::move(ref);
  q.labels = SplitListParam(req.QueryParam("labels", req.QueryParam("label")));
  q.stream = req.QueryParam("stream");
  if (!q.stream.empty() && q.stream != "stdout" && q.stream != "stderr") {
    return Status::InvalidArgument("stream: expected stdout or stderr");
  }
  q.text = req.QueryParam("q");
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> after, IntParam(req, "after"));
  q.after_id = after.value_or(0);
  return q;
}

}  // namespace cohort::api
