// Plumbing shared by the compatibility routes: who the client is (its client id in shared
// mode), the server's external base URL, run references of the vendor's paths and inputs, and
// answers that the vendor's clients treat as retryable.
//
// Pure functions over requests; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/message.h"
#include "server/http/router.h"
#include "store/store.h"

namespace cohort::compat {

namespace bj = boost::json;

// A client of the vendor's protocol. In shared mode every process sends its own client id
// (X-WANDB-CLIENT-ID on GraphQL, X-WANDB-ASYNC-CLIENT-ID on file_stream); plain clients send
// none and all count as one client, "default".
struct ClientId {
  std::string key = "default";  // [A-Za-z0-9_-], at most 64 characters
  bool shared = false;
};
ClientId ClientFromRequest(const http::HttpRequest& req);

// "http://host:port" as the client reached us (X-Forwarded-Proto/-Host honoured).
std::string BaseUrl(const http::HttpRequest& req);

// The run of the vendor's (entity, project, run) names for the caller. `entity` empty: the
// caller's; another entity: kNotFound; `project` empty: "uncategorized". Invalid names:
// kInvalidArgument naming the field.
Result<store::RunRef> CompatRunRef(const api::AuthContext& who, std::string_view entity,
                                   std::string_view project, std::string_view run);

// The run, created (pending, no fields) when it does not exist: data of a client whose run was
// deleted under it is kept rather than refused.
Result<store::RunRecord> EnsureRun(store::Store* store, const store::RunRef& ref);

// Wraps a handler so that an exception (a bug) is logged and answered 500 instead of dropping
// the connection.
http::Handler Guarded(std::string what, http::Handler h);

// 429 with Retry-After and RateLimit headers: the vendor's clients back off and retry.
http::HttpResponse Backpressure(int retry_after_s, std::string_view message);

// The vendor's opaque run id ("bucket id") for a run, and back.
std::string BucketId(const store::RunRef& ref);
bool ParseBucketId(std::string_view id, store::RunRef* out);

// Merges object `patch` into `base` recursively (objects merge, other values replace), at most
// `depth` levels deep.
void DeepMerge(bj::object* base, const bj::object& patch, int depth = 4);

// Milliseconds to "2024-05-01T12:00:00Z" (the vendor's DateTime scalar).
std::string IsoTime(int64_t ms);

}  // namespace cohort::compat
