// The outgoing HTTP POST of alert webhooks, and when a failed call is tried again. The server
// sends webhooks itself (the agent's client, agent/http_client.h, is the agent's and talks to one
// Cohort server); this one posts a body to any http(s) URL with the given headers, follows no
// redirects, and reads at most kMaxResponseBytes of the answer. Unless the operator allows it
// (`cohort server --webhook-allow-private`), it connects to public addresses only: the address
// is checked at connect time, after DNS (a name that resolves to 127.0.0.1, 169.254.169.254, a
// private network, ...: refused, whatever the URL says and however often the name changes).
//
// Threading: CurlWebhookPoster is thread-safe (one easy handle per call); the free functions are
// pure.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::server::webhooks {

struct WebhookResponse {
  int status = 0;
  std::string body;  // at most kMaxResponseBytes
};

// Why `addr` (IPv4 or IPv6) is not a public unicast address: "loopback", "private",
// "link-local", "unspecified", "multicast", "documentation", "shared (CGNAT)", "reserved", ...;
// empty when it is public (or of another family). IPv6 forms that carry an IPv4 address
// (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged
// by it.
std::string NonPublicAddress(const sockaddr* addr);

// Posts webhook calls; an interface so that the dispatcher's tests can answer without a network.
class WebhookPoster {
 public:
  virtual ~WebhookPoster() = default;
  // Any HTTP status is a value; kUnavailable (with libcurl's reason) when no answer came;
  // kPermissionDenied when the destination is refused (not worth trying again).
  virtual Result<WebhookResponse> Post(const std::string& url, const std::string& body,
                                       const std::vector<std::string>& headers) = 0;
};

class CurlWebhookPoster : public WebhookPoster {
 public:
  static constexpr size_t kMaxResponseBytes = 4096;
  struct Options {
    double connect_timeout_s = 5;
    double timeout_s = 10;
    // Connect to loopback, private, link-local, ... addresses too (NonPublicAddress).
    bool allow_private = false;
  };
  explicit CurlWebhookPoster(Options options);
  CurlWebhookPoster() : CurlWebhookPoster(Options{}) {}
  Result<WebhookResponse> Post(const std::string& url, const std::string& body,
                               const std::vector<std::string>& headers) override;
  // Makes the calls in flight, and later ones, fail at once with kUnavailable (shutdown).
  void Abort() { aborted_.store(true); }

 private:
  Options options_;
  std::atomic<bool> aborted_{false};
};

// Retries: the n-th failed attempt (n >= 1) is tried again after
// min(initial_ms * 2^(n-1), max_ms); after max_attempts attempts the delivery fails.
struct WebhookRetryPolicy {
  int max_attempts = 10;
  int64_t initial_ms = 5'000;
  int64_t max_ms = 3'600'000;  // 5 s, 10 s, ... 42.7 min, 1 h: about 2.4 h in all
};
// The policy with $COHORT_WEBHOOK_BACKOFF_MAX_S (a positive number of seconds) capping the delay
// (for operators and the tests, as $COHORT_BACKOFF_MAX_S does for the agent). Unset or
// malformed: the defaults.
WebhookRetryPolicy RetryPolicyFromEnvironment();
// The delay after the `attempts`-th failed attempt.
int64_t RetryDelayMs(const WebhookRetryPolicy& policy, int64_t attempts);
// Whether an HTTP status is worth trying again: 408, 425, 429 and 5xx (other 3xx and 4xx
// answers mean the webhook is wrong, and fail the delivery at once).
bool RetryableStatus(int status);

}  // namespace cohort::server::webhooks
