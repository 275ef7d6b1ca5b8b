// The W&B wire-compatibility layer of `cohort server` (docs/compat.md): the routes that the
// vendor's own clients call when pointed at Cohort with WANDB_BASE_URL and WANDB_API_KEY.
//
//   POST /graphql                                   GraphQL (graphql_route.cc, resolvers*.cc)
//   POST /files/{entity}/{project}/{run}/file_stream  history, system metrics, console, summary,
//                                                   run end (file_stream.cc)
//   PUT  /files/{entity}/{project}/{run}/upload/{name...}  uploads (run_files.cc)
//   GET  /api/v1/runs/{entity}/{project}/{run}/files[/{name...}]  Cohort's API to the files
//   POST /sdk/otel/v1/...                           the clients' own telemetry, discarded
//
// Threading: register before the server starts; handlers are thread-safe.
#pragma once

#include "server/api/context.h"
#include "server/http/router.h"

namespace cohort::compat {

void RegisterCompatRoutes(http::Router& router, api::ApiContext* ctx);

}  // namespace cohort::compat
