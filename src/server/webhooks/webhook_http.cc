#include "server/webhooks/webhook_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "core/version.h"

namespace cohort::server::webhooks {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  const size_t room = CurlWebhookPoster::kMaxResponseBytes -
                      std::min(out->size(), CurlWebhookPoster::kMaxResponseBytes);
  out->append(data, std::min(room, size * n));
  return size * n;  // read (and drop) the rest
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;
}

}  // namespace

CurlWebhookPoster::CurlWebhookPoster(Options options) : options_(options) { GlobalInitOnce(); }

Result<WebhookResponse> CurlWebhookPoster::Post(const std::string& url, const std::string& body,
                                                const std::vector<std::string>& headers) {
  if (aborted_.load()) return Status::Unavailable("webhook: the server is shutting down");
  CURL* c = curl_easy_init();
  if (c == nullptr) return Status::Internal("webhook: curl_easy_init failed");
  struct curl_slist* list = nullptr;
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  list = curl_slist_append(list, "Expect:");
  WebhookResponse response;
  char error[CURL_ERROR_SIZE] = {0};
  const std::string agent = "cohort-server/" + std::string(kVersion);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, long(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(options_.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(options_.timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  if (const char* ca = std::getenv("COHORT_CA_BUNDLE"); ca != nullptr && *ca != 0) {
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  }
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &aborted_);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(list);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    return Status::Unavailable(std::string(error[0] ? error : curl_easy_strerror(rc)));
  }
  response.status = int(status);
  return response;
}

WebhookRetryPolicy RetryPolicyFromEnvironment() {
  WebhookRetryPolicy p;
  if (const char* env = std::getenv("COHORT_WEBHOOK_BACKOFF_MAX_S"); env != nullptr) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == 0 && s > 0 && s < 1e9) {
      p.max_ms = std::max<int64_t>(1, int64_t(s * 1000));
      p.initial_ms = std::min(p.initial_ms, p.max_ms);
    }
  }
  return p;
}

int64_t RetryDelayMs(const WebhookRetryPolicy& policy, int64_t attempts) {
  int64_t delay = policy.initial_ms;
  for (int64_t n = 1; n < attempts && delay < policy.max_ms; ++n) delay *= 2;
  return std::min(delay, policy.max_ms);
}

bool RetryableStatus(int status) {
  return status == 408 || status == 425 || status == 429 || status >= 500;
}

}  // namespace cohort::server::webhooks
