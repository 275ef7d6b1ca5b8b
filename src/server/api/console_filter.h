// The console filter of a request (`label`/`labels`, `stream`, `q`, `after`), shared by the
// console routes: the lines themselves (console_api.cc) and their paging index
// (console_index_api.cc) must read a filter the same way.
#pragma once

#include "server/api/context.h"

namespace cohort::api {

// The run of the path and the filter of the query string; `after` defaults to 0. An error
// names the parameter at fault (an unknown stream, a non-integer `after`).
Result<store::ConsoleQuery> ConsoleFilterFromRequest(const http::HttpRequest& req,
                                                     const AuthContext& who);

}  // namespace cohort::api
