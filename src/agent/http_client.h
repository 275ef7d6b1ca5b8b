// HttpClient: one libcurl easy handle, kept alive across requests to one server, used by the
// Sender to call the Cohort HTTP API (docs/api.md).
//
// Threading: not thread-safe; one thread uses a client at a time (each Sender owns its own).
// Abort() alone may be called from any thread: it makes the request in flight (and later ones)
// fail promptly with kUnavailable, for shutdown.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "core/version.h"
#include "wal/file.h"

namespace cohort::agent {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::optional<double> retry_after_s;  // from a Retry-After header
};

// "HTTP 409 conflict: file model.pt: upload it first": the status, the code and the message of
// a server's error JSON ({"error": {"code", "message"}}; the body's start when it has none).
std::string AnswerErrorText(const HttpResponse& r);

struct HttpClientOptions {
  double connect_timeout_s = 5.0;
  double request_timeout_s = 120.0;
  std::string user_agent = "cohort-agent/" + std::string(kVersion);
  // PEM file of the CAs trusted for https:// servers; empty: $COHORT_CA_BUNDLE when set, else
  // the system's (a server behind a load balancer with a private CA).
  std::string ca_file;
};

// The CA bundles of the common layouts (Debian/Ubuntu, RHEL/Fedora, SUSE, Alpine), in the order
// they are tried.
inline constexpr std::string_view kKnownCaBundles[] = {
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem"};

// Where TLS peers are verified from when libcurl has no default bundle (the portable build of
// the wheels): `ssl_cert_file` ($SSL_CERT_FILE) when not empty, else the first of `candidates`
// that exists in `fs`; empty when none does.
std::string FindCaBundle(wal::FileSystem& fs, std::string_view ssl_cert_file,
                         std::span<const std::string_view> candidates = kKnownCaBundles);

class HttpClient {
 public:
  // `base_url` like "http://127.0.0.1:8787" (a trailing slash is ignored).
  explicit HttpClient(std::string base_url, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `method` `path` (starting with "/") with a body (empty: none) of `content_type`, the
  // API key as a bearer token and `extra_header` ("Name: value", several separated by CRLF;
  // empty: none; an "Accept: ..." first replaces the default "Accept: application/json"). Any
  // HTTP status
  // is a Result value; kUnavailable when no answer came (connection refused, timeout, reset),
  // kInternal when libcurl could not be set up.
  Result<HttpResponse> Request(std::string_view method, std::string_view path,
                               std::string_view body, std::string_view api_key,
                               std::string_view content_type = "application/json",
                               std::string_view extra_header = {});

  // Whether the last Request's answer had begun (its status line and headers came) before it
  // failed: a transfer cut off in its body, not a server that could not be reached.
  bool last_answer_started() const { return last_answer_started_; }

  void Abort() { aborted_.store(true); }
  bool aborted() const { return aborted_.load(); }
  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  HttpClientOptions options_;
  void* curl_ = nullptr;  // CURL*, kept for keep-alive
  std::atomic<bool> aborted_{false};
  bool last_answer_started_ = false;  // Request's caller's thread only, as curl_ is
};

}  // namespace cohort::agent
