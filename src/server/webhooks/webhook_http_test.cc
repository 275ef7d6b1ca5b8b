// The connect-time address check of webhook calls (SSRF): which addresses are public, IPv6 forms
// that carry an IPv4 address, and a poster that refuses non-public destinations unless allowed.
#include "server/webhooks/webhook_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace cohort::server::webhooks {
namespace {

// NonPublicAddress of an address literal.
std::string Why(const std::string& ip) {
  sockaddr_storage ss{};
  if (ip.find(':') == std::string::npos) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, ip.c_str(), &in.sin_addr), 1) << ip;
    std::memcpy(&ss, &in, sizeof(in));
  } else {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    EXPECT_EQ(::inet_pton(AF_INET6, ip.c_str(), &in6.sin6_addr), 1) << ip;
    std::memcpy(&ss, &in6, sizeof(in6));
  }
  return NonPublicAddress(reinterpret_cast<const sockaddr*>(&ss));
}

TEST(WebhookAddressTest, NonPublicAddressesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.0.7", "loopback"},
      {"0.0.0.0", "unspecified"},
      {"0.1.2.3", "unspecified"},
      {"10.0.0.1", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"169.254.169.254", "link-local"},
      {"100.64.0.1", "shared (CGNAT)"},
      {"100.127.255.255", "shared (CGNAT)"},
      {"192.0.2.5", "documentation"},
      {"198.51.100.5", "documentation"},
      {"203.0.113.5", "documentation"},
      {"198.18.0.1", "benchmarking"},
      {"224.0.0.1", "multicast"},
      {"239.255.255.250", "multicast"},
      {"240.0.0.1", "reserved"},
      {"255.255.255.255", "reserved"},
      {"192.0.0.8", "reserved"},
      {"::", "unspecified"},
      {"::1", "loopback"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:7f00:1", "loopback"},
      {"::ffff:169.254.169.254", "link-local"},
      {"::ffff:10.1.2.3", "private"},
      {"::ffff:0:192.168.0.1", "private"},  // IPv4-translated
      {"::127.0.0.1", "loopback"},          // IPv4-compatible
      {"::10.0.0.1", "private"},
      {"64:ff9b::127.0.0.1", "loopback"},  // NAT64
      {"64:ff9b::a9fe:a9fe", "link-local"},
      {"2002:7f00:1::", "loopback"},  // 6to4 of 127.0.0.1
      {"2002:a00:1::1", "private"},
      {"fc00::1", "private"},
      {"fd12:3456:789a::1", "private"},
      {"fe80::1", "link-local"},
      {"febf::1", "link-local"},
      {"fec0::1", "site-local"},
      {"ff02::1", "multicast"},
      {"2001:db8::1", "documentation"},
      {"2001::1", "reserved"},  // Teredo, 2001::/23
      {"100::1", "reserved"},   // discard
      {"64:ff9b:1::1", "reserved"},
      {"4000::1", "reserved"},
  };
  for (const auto& [ip, why] : cases) EXPECT_EQ(Why(ip), why) << ip;
}

TEST(WebhookAddressTest, PublicAddressesPass) {
  for (const char* ip : {"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "172.15.255.255",
                         "100.128.0.1", "192.169.0.1", "169.253.0.1", "11.0.0.1", "223.255.255.254",
                         "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8",
                         "64:ff9b::808:808", "2002:808:808::1", "2001:4860:4860::8888"}) {
    EXPECT_EQ(Why(ip), "") << ip;
  }
}

TEST(WebhookAddressTest, PosterRefusesNonPublicDestinationsUnlessAllowed) {
  CurlWebhookPoster strict(CurlWebhookPoster::Options{.connect_timeout_s = 2, .timeout_s = 2});
  for (const char* url : {"http://127.0.0.1:1/hook", "http://localhost:1/hook",
                          "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/",
                          "http://[::ffff:127.0.0.1]:1/", "http://2130706433:1/",
                          "http://0.0.0.0:1/", "http://10.255.255.1:1/"}) {
    auto r = strict.Post(url, "{}", {});
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied)
        << url << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find("non-public address"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("--webhook-allow-private"), std::string::npos);
  }
  auto r = strict.Post("http://169.254.169.254/x", "{}", {});
  EXPECT_NE(r.status().message().find("169.254.169.254 resolves to a non-public address "
                                      "(169.254.169.254, link-local)"),
            std::string::npos)
      << r.status().message();
  // Allowed: the call is made (nothing listens on port 1: no answer, which is retried).
  CurlWebhookPoster lax(
      CurlWebhookPoster::Options{.connect_timeout_s = 2, .timeout_s = 2, .allow_private = true});
  r = lax.Post("http://127.0.0.1:1/hook", "{}", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace cohort::server::webhooks
