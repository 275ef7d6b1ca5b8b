// RegisterCompatRoutes and the GraphQL endpoint: POST /graphql with
// {"query": "...", "variables": {...}, "operationName": "..."} answered as
// {"data": {...}[, "errors": [...]]}. A body that is not such a JSON object is a 400; a document
// that does not parse, or names an unknown operation, is a GraphQL error (HTTP 200); a bad key
// is a 401 in the same shape.
#include <cstdio>
#include <optional>

#include "core/clock.h"
#include "core/json.h"
#include "server/api/throttle.h"
#include "server/compat/artifact_manifest.h"
#include "server/compat/artifacts_compat.h"
#include "server/compat/compat.h"
#include "server/compat/graphql_exec.h"
#include "server/compat/resolvers.h"
#include "server/compat/run_files.h"

namespace cohort::compat {

// file_stream.cc
void RegisterFileStreamRoute(http::Router& r, api::ApiContext* ctx);

namespace {

constexpr size_t kMaxQueryBytes = 1 << 20;

http::HttpResponse GqlError(int status, std::string_view message) {
  return http::HttpResponse::Json(status, bj::serialize(gql::ErrorDocument(message)));
}

// A throttle's 429 in the GraphQL error shape, with its rate-limit headers.
http::HttpResponse GqlRefusal(http::HttpResponse refused) {
  std::string retry;
  for (const auto& [name, value] : refused.headers) {
    if (name == "Retry-After") retry = value;
  }
  auto resp = GqlError(429, "rate limited: retry after " + retry + " s");
  resp.headers = std::move(refused.headers);
  return resp;
}

// Reads {"query", "variables", "operationName"} into `exec` (its document parsed into `doc`);
// the answer refusing the request when it is not such a body or the document does not parse.
std::optional<http::HttpResponse> ReadGraphqlRequest(const http::HttpRequest& req,
                                                     std::optional<gql::Document>* doc,
                                                     gql::ExecRequest* exec) {
  auto body = json::Parse(req.body);
  if (!body.ok()) return GqlError(400, "body: " + body.status().message());
  if (body->is_array()) return GqlError(400, "batched GraphQL requests are not supported");
  if (!body->is_object()) return GqlError(400, "body: expected a JSON object");
  const bj::object& obj = body->get_object();
  const bj::value* query = obj.if_contains("query");
  if (query == nullptr || !query->is_string()) {
    return GqlError(400, "body: \"query\" must be a string");
  }
  if (query->get_string().size() > kMaxQueryBytes) {
    return GqlError(413, "query: longer than 1 MiB");
  }
  if (const bj::value* vars = obj.if_contains("variables"); vars && !vars->is_null()) {
    if (!vars->is_object()) return GqlError(400, "body: \"variables\" must be an object");
    exec->variables = vars->get_object();
  }
  if (const bj::value* name = obj.if_contains("operationName"); name && name->is_string()) {
    exec->operation_name = std::string(name->get_string());
  }
  auto parsed = gql::Parse(std::string_view(query->get_string()));
  if (!parsed.ok()) return GqlError(200, parsed.status().message());
  doc->emplace(std::move(parsed).value());
  exec->document = &**doc;
  return std::nullopt;
}

http::HttpResponse HandleGraphql(api::ApiContext* ctx, http::HttpRequest& req) {
  auto who = ctx->auth->Authenticate(req);
  if (!who.ok()) {
    if (ctx->metrics) ctx->metrics->AddRejected("unauthenticated");
    int status = api::HttpStatusFor(who.status().code());
    auto resp = GqlError(status, who.status().message());
    if (status == 429 || status == 503) resp.headers.emplace_back("Retry-After", "1");
    return resp;
  }
  // One request at its arrival (before any parsing), then each top-level field of a mutation
  // beyond the first (each a write: aliases would make one request a hundred of them), charged
  // together before any runs. A mutation of more than the executor runs is refused without
  // running: it costs its one.
  if (auto refused = api::ThrottleRequest(ctx, who->entity)) return GqlRefusal(std::move(*refused));
  std::optional<gql::Document> doc;
  gql::ExecRequest exec;
  if (auto refused = ReadGraphqlRequest(req, &doc, &exec)) return std::move(*refused);
  if (auto writes = gql::CountMutationFields(exec);
      writes.ok() && *writes > 1 && *writes <= gql::ExecLimits{}.max_mutation_fields) {
    if (auto refused = api::ThrottleMoreRequests(ctx, who->entity, int64_t(*writes) - 1)) {
      return GqlRefusal(std::move(*refused));
    }
  }

  GqlContext c;
  c.api = ctx;
  c.who = *who;
  c.client = ClientFromRequest(req);
  c.base_url = BaseUrl(req);
  c.now_ms = NowMillis();
  auto query_root = MakeQueryRoot(&c);
  auto mutation_root = MakeMutationRoot(&c);
  bj::object answer = gql::Execute(exec, *query_root, *mutation_root);
  return http::HttpResponse::Json(200, bj::serialize(answer));
}

}  // namespace

void RegisterCompatRoutes(http::Router& router, api::ApiContext* ctx) {
  router.Add("POST", "/graphql", Guarded("graphql", [ctx](http::HttpRequest& req) {
               return HandleGraphql(ctx, req);
             }));
  RegisterFileStreamRoute(router, ctx);
  RegisterRunFileRoutes(router, ctx);
  RegisterArtifactCompatRoutes(router, ctx);
  RegisterArtifactManifestRoute(router, ctx);
  // The vendor's clients also send their own OpenTelemetry metrics and logs to the base URL;
  // they are not run data and are discarded.
  router.Add("POST", "/sdk/otel/{rest...}", [](http::HttpRequest&) {
    return http::HttpResponse::Text(200, "", "application/x-protobuf");
  });
}

}  // namespace cohort::compat
