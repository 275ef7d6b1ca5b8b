// ReadClient: the terminal commands' side of the HTTP API (reads, and the odd POST) (docs/api.md).
// It finds the server and key like the client library does (COHORT_BASE_URL / COHORT_API_KEY, else
// the user config file that `cohort login` writes, else http://127.0.0.1:8787), GETs JSON over one
// kept-alive connection and turns error answers into Status values with the server's message.
// Also parses the RUN argument of the commands ("entity/project/run_id" or "project/run_id").
//
// Threading: not thread-safe; one command uses one client.
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/http_client.h"
#include "cohort/status.h"

namespace cohort::cli {

struct RunPath {
  std::string entity, project, run_id;
  // "/api/v1/runs/<entity>/<project>/<run>" with each segment escaped.
  std::string ApiPath() const;
  std::string Text() const { return entity + "/" + project + "/" + run_id; }
};

// Query parameters, in order; empty values are left out.
using Query = std::vector<std::pair<std::string, std::string>>;

// `path` with `query` appended ("?a=1&b=x%20y"), each value percent-encoded.
std::string WithQuery(std::string_view path, const Query& query);

class ReadClient {
 public:
  // kUnauthenticated when no key is configured; kIOError when the config file is unreadable.
  static Result<std::unique_ptr<ReadClient>> Open();
  // A client of the server at `base_url` with `api_key` (`cohort login` checks the key it saves).
  static std::unique_ptr<ReadClient> To(std::string base_url, std::string api_key);

  // GET `path` with `query` -> the parsed body. kNotFound / kUnauthenticated /
  // kPermissionDenied / kInvalidArgument from the answer's status, with the server's message;
  // kUnavailable when the server cannot be reached.
  Result<boost::json::value> Get(std::string_view path, const Query& query = {});

  // POST `path` with a JSON body -> the parsed answer; errors as Get.
  Result<boost::json::value> Post(std::string_view path, const boost::json::object& body);

  // `method` `path` with a body of `content_type` and an extra header ("Range: bytes=0-9"; empty:
  // none) -> the raw answer of a 2xx status; any other status is an error as for Get.
  Result<agent::HttpResponse> Send(std::string_view method, std::string_view path,
                                   std::string_view body = {},
                                   std::string_view content_type = "application/json",
                                   std::string_view extra_header = {});

  // `method` (POST, PUT, DELETE) `path` with a JSON body -> the parsed answer; errors as Get.
  Result<boost::json::value> SendJson(std::string_view method, std::string_view path,
                                      const boost::json::object& body);

  // The entity of the API key (GET /api/v1/viewer), fetched once.
  Result<std::string> Entity();

  // "entity/project/run_id" or "project/run_id" (the viewer's entity).
  Result<RunPath> ParseRun(std::string_view text);

  const std::string& base_url() const { return http_.base_url(); }
  const std::string& api_key() const { return api_key_; }

 private:
  ReadClient(std::string base_url, std::string api_key);
  // A failed request's error: "the download from <server> was cut off: ..." when the answer had
  // begun, else "cannot reach the server at <server>: ...".
  Status TransferError(std::string_view method, const Status& failed) const;

  agent::HttpClient http_;
  std::string api_key_;
  std::string entity_;
};

// Helpers over Boost.JSON values of API answers: a missing or mistyped field reads as the
// default.
std::string StrField(const boost::json::value& v, std::string_view key);
int64_t IntField(const boost::json::value& v, std::string_view key, int64_t def = 0);

}  // namespace cohort::cli
