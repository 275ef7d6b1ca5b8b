#include "server/webhooks/webhook_http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
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

std::string NonPublicIpv4(const uint8_t* b) {
  const uint32_t a = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  auto in = [a](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x00000000, 8)) return "unspecified";
  if (in(0x7f000000, 8)) return "loopback";
  if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return "private";
  if (in(0xa9fe0000, 16)) return "link-local";
  if (in(0x64400000, 10)) return "shared (CGNAT)";
  if (in(0xc0000200, 24) || in(0xc6336400, 24) || in(0xcb007100, 24)) return "documentation";
  if (in(0xc6120000, 15)) return "benchmarking";
  if (in(0xe0000000, 4)) return "multicast";
  if (in(0xc0000000, 24) || in(0xc0586300, 24) || in(0xf0000000, 4)) return "reserved";
  return "";
}

std::string NonPublicIpv6(const uint8_t* b) {
  auto zeros = [b](int from, int to) {
    for (int i = from; i < to; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  };
  if (zeros(0, 16)) return "unspecified";
  if (zeros(0, 15) && b[15] == 1) return "loopback";
  // Forms carrying an IPv4 address: mapped ::ffff:0:0/96, translated ::ffff:0:0:0/96,
  // compatible ::/96, NAT64 64:ff9b::/96; 6to4 2002::/16 (the address in bytes 2..5).
  if (zeros(0, 10) && b[10] == 0xff && b[11] == 0xff) return NonPublicIpv4(b + 12);
  if (zeros(0, 8) && b[8] == 0xff && b[9] == 0xff && zeros(10, 12)) return NonPublicIpv4(b + 12);
  if (zeros(0, 12)) return NonPublicIpv4(b + 12);
  static constexpr uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kNat64, 12) == 0) return NonPublicIpv4(b + 12);
  if (b[0] == 0x20 && b[1] == 0x02) return NonPublicIpv4(b + 2);
  if ((b[0] & 0xfe) == 0xfc) return "private";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local";
  if (b[0] == 0xff) return "multicast";
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "documentation";
  if (b[0] == 0x20 && b[1] == 0x01 && (b[2] & 0xfe) == 0) return "reserved";  // 2001::/23
  if ((b[0] & 0xe0) != 0x20) return "reserved";  // outside global unicast 2000::/3
  return "";
}

// The address as text ("127.0.0.1", "::1").
std::string AddressText(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, addr, sizeof(in));
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, addr, sizeof(in6));
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
  }
  return text;
}

// What the connect-time check saw: the first address it refused.
struct Guard {
  bool allow_private = false;
  std::string refused;  // "127.0.0.1, loopback"
};

// CURLOPT_OPENSOCKETFUNCTION: opens the socket only for a public address (each address a name
// resolves to is checked as curl tries it).
curl_socket_t OnOpenSocket(void* user, curlsocktype, struct curl_sockaddr* a) {
  auto* guard = static_cast<Guard*>(user);
  if (!guard->allow_private) {
    // The address is addrlen bytes from &a->addr (more than a struct sockaddr for IPv6).
    sockaddr_storage ss{};
    std::memcpy(&ss, &a->addr, std::min<size_t>(a->addrlen, sizeof(ss)));
    const auto* addr = reinterpret_cast<const sockaddr*>(&ss);
    const std::string why = NonPublicAddress(addr);
    if (!why.empty()) {
      if (guard->refused.empty()) guard->refused = AddressText(addr) + ", " + why;
      return CURL_SOCKET_BAD;
    }
  }
  return ::socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

// The host of `url` for messages (the URL itself when curl cannot parse it).
std::string HostOf(const std::string& url) {
  std::string host = url;
  CURLU* u = curl_url();
  char* h = nullptr;
  if (u != nullptr && curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK && h != nullptr) {
    host = h;
  }
  curl_free(h);
  curl_url_cleanup(u);
  return host;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;
}

}  // namespace

std::string NonPublicAddress(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, addr, sizeof(in));
    return NonPublicIpv4(reinterpret_cast<const uint8_t*>(&in.sin_addr.s_addr));
  }
  if (addr->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, addr, sizeof(in6));
    return NonPublicIpv6(in6.sin6_addr.s6_addr);
  }
  return "";
}

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
  Guard guard{.allow_private = options_.allow_private};
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &guard);
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
  if (rc != CURLE_OK && !guard.refused.empty()) {
    return Status::PermissionDenied("webhook: " + HostOf(url) +
                                    " resolves to a non-public address (" + guard.refused +
                                    "); the server's operator can allow such addresses with "
                                    "`cohort server --webhook-allow-private`");
  }
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
