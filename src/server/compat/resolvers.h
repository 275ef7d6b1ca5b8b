// The GraphQL operations the vendor's clients send (docs/compat.md, "GraphQL"), as resolver
// objects for graphql_exec.h:
//   Query:    viewer, serverInfo, __type(name), project(name, entityName) { run(name) },
//             model(name, entityName) { bucket(name) }, entity(name)
//   Mutation: upsertBucket(input), createRunFiles(input), markRunFilesUploaded(input),
//             the artifact mutations (artifacts_compat.h), notifyScriptableRunAlert(input)
//             (alerts_compat.h)
// Other root fields are GraphQL errors; unknown fields below a known one answer null.
//
// Threading: objects live for one request and are used by its thread only.
#pragma once

#include <memory>
#include <string>

#include "server/api/context.h"
#include "server/compat/compat_context.h"
#include "server/compat/graphql_exec.h"

namespace cohort::compat {

// What resolvers know about the request.
struct GqlContext {
  api::ApiContext* api = nullptr;
  api::AuthContext who;
  ClientId client;
  std::string base_url;  // for upload URLs
  int64_t now_ms = 0;
};

std::unique_ptr<gql::Object> MakeQueryRoot(GqlContext* c);
std::unique_ptr<gql::Object> MakeMutationRoot(GqlContext* c);

// A run as the vendor's "Run" (bucket) type; see resolvers_run.cc.
gql::ObjectPtr MakeRunObject(GqlContext* c, store::RunRecord run);
// A project as the vendor's "Project" type, with run(name) / bucket(name).
gql::ObjectPtr MakeProjectObject(GqlContext* c, store::RunRef project);

// The features Cohort advertises in serverInfo.features.
bj::array ServerFeatures();

}  // namespace cohort::compat
