#include "server/webhooks/webhook_payload.h"

#include <gtest/gtest.h>

#include "server/webhooks/webhook_http.h"

namespace cohort::server::webhooks {
namespace {

namespace bj = boost::json;

bj::object Alert() {
  return bj::object{{"id", 7},
                    {"entity", "acme"},
                    {"project", "vision net"},
                    {"run", "r1"},
                    {"writer", "rank_3"},
                    {"rule_id", nullptr},
                    {"source", "code"},
                    {"condition", "code:x"},
                    {"level", "ERROR"},
                    {"title", "loss <is> NaN & worse"},
                    {"text", "step 10"},
                    {"evidence", bj::object{}},
                    {"state", "open"},
                    {"opened_ms", 1000},
                    {"resolved_ms", nullptr},
                    {"acked_ms", nullptr},
                    {"acked_by", nullptr},
                    {"last_seen_ms", 1000},
                    {"count", 1}};
}

TEST(WebhookPayloadTest, GenericIsVersionedAndCarriesTheAlertAsIs) {
  const std::string url = RunUrl("http://cohort.example:8787/", Alert());
  EXPECT_EQ(url, "http://cohort.example:8787/?p=acme%2Fvision%20net&run=r1");
  bj::value v = bj::parse(GenericPayload("opened", Alert(), url));
  EXPECT_EQ(v.at("version").as_int64(), 1);
  EXPECT_EQ(v.at("event").as_string(), "opened");
  EXPECT_EQ(v.at("alert"), bj::value(Alert()));
  EXPECT_EQ(v.at("run_url").as_string(), url);
  EXPECT_TRUE(bj::parse(GenericPayload("resolved", Alert(), "")).at("run_url").is_null());
  EXPECT_EQ(RunUrl("", Alert()), "");
}

TEST(WebhookPayloadTest, SlackEscapesMrkdwnAndLinksTheRun) {
  bj::value v = bj::parse(SlackPayload("opened", Alert(), "http://h/?p=a"));
  const std::string text(v.at("text").as_string());
  EXPECT_NE(text.find("[ERROR] loss &lt;is&gt; NaN &amp; worse"), std::string::npos) << text;
  const auto& blocks = v.at("blocks").as_array();
  ASSERT_EQ(blocks.size(), 2u);
  const std::string section(blocks[0].at("text").at("text").as_string());
  EXPECT_NE(section.find("*[ERROR] loss &lt;is&gt; NaN &amp; worse*"), std::string::npos)
      << section;
  EXPECT_NE(section.find("step 10"), std::string::npos);
  const std::string context(blocks[1].at("elements").at(0).at("text").as_string());
  EXPECT_NE(context.find("<http://h/?p=a|open the run>"), std::string::npos) << context;
  EXPECT_NE(context.find("writer rank_3"), std::string::npos);
  bj::value resolved = bj::parse(SlackPayload("resolved", Alert(), ""));
  EXPECT_TRUE(std::string(resolved.at("text").as_string()).starts_with("Resolved: loss"));
}

// Escaping grows '<' five times: text clipped before it was escaped made a 10,111-character
// section (Slack refuses over 3000); the notification text was not escaped at all.
TEST(WebhookPayloadTest, SlackTextIsEscapedThenCutWithinItsLimits) {
  bj::object alert = Alert();
  alert["title"] = "<!channel> " + std::string(200, '<');
  alert["text"] = std::string(2400, '<') + "&";
  bj::value v = bj::parse(SlackPayload("opened", alert, "http://h/r"));
  const std::string text(v.at("text").as_string());
  EXPECT_LE(text.size(), 2000u);
  EXPECT_EQ(text.find("<!"), std::string::npos) << text;
  EXPECT_NE(text.find("&lt;!channel&gt;"), std::string::npos) << text;
  const std::string section(v.at("blocks").at(0).at("text").at("text").as_string());
  EXPECT_LE(section.size(), 3000u);
  EXPECT_EQ(section.find('<'), std::string::npos);
  // Cut between escapes, never inside one: every '&' starts "&lt;" or "&amp;".
  for (size_t at = section.find('&'); at != std::string::npos; at = section.find('&', at + 1)) {
    EXPECT_TRUE(section.compare(at, 4, "&lt;") == 0 || section.compare(at, 4, "&gt;") == 0 ||
                section.compare(at, 5, "&amp;") == 0)
        << section.substr(at, 8);
  }
  EXPECT_TRUE(section.ends_with("\xE2\x80\xA6")) << section.substr(section.size() - 10);
}

TEST(WebhookPayloadTest, DiscordHasAnEmbedWithinLimitsAndPingsNobody) {
  bj::object alert = Alert();
  alert["title"] = std::string(600, 't');
  alert["text"] = "@everyone " + std::string(5000, 'x');
  bj::value v = bj::parse(DiscordPayload("opened", alert, "http://h/r"));
  EXPECT_LE(v.at("content").as_string().size(), 2000u);
  const auto& embed = v.at("embeds").at(0);
  EXPECT_LE(embed.at("title").as_string().size(), 256u);
  EXPECT_LE(embed.at("description").as_string().size(), 4096u);
  EXPECT_EQ(embed.at("url").as_string(), "http://h/r");
  EXPECT_EQ(embed.at("color").as_int64(), 0xE74C3C);
  EXPECT_TRUE(v.at("allowed_mentions").at("parse").as_array().empty());
  EXPECT_EQ(bj::parse(DiscordPayload("resolved", Alert(), "")).at("embeds").at(0).at("color"),
            0x2ECC71);
}

TEST(WebhookPayloadTest, GenericPayloadsWithASecretAreSigned) {
  // RFC 4231 test case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?").
  EXPECT_EQ(SignatureValue("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  auto h = PayloadHeaders("generic", "opened", 12, "Jefe", "what do ya want for nothing?");
  EXPECT_NE(std::find(h.begin(), h.end(),
                      "X-Cohort-Signature: "
                      "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            h.end());
  EXPECT_NE(std::find(h.begin(), h.end(), "X-Cohort-Delivery: 12"), h.end());
  for (const std::string& x : PayloadHeaders("slack", "opened", 12, "Jefe", "b")) {
    EXPECT_FALSE(x.starts_with("X-Cohort-Signature")) << x;
  }
  for (const std::string& x : PayloadHeaders("generic", "opened", 0, "", "b")) {
    EXPECT_FALSE(x.starts_with("X-Cohort-Signature")) << x;
    EXPECT_FALSE(x.starts_with("X-Cohort-Delivery")) << x;
  }
}

TEST(WebhookPayloadTest, PublicUrlMustBeAnHttpUrlWithAHost) {
  for (const char* ok :
       {"https://cohort.example.com", "http://10.0.0.5:8787/", "https://example.com/cohort/ui"}) {
    EXPECT_TRUE(ValidatePublicUrl(ok).ok()) << ok;
  }
  for (const char* bad :
       {"", "cohort.example.com", "ftp://example.com", "https://", "https://example.com/?x=1",
        "https://example.com/#top", "https://exa mple.com"}) {
    Status s = ValidatePublicUrl(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(s.message().starts_with("--public-url: ")) << s.message();
  }
  // run_url on a public address with a path: no doubled slash.
  const boost::json::object alert{{"entity", "acme"}, {"project", "p"}, {"run", "r 1"}};
  EXPECT_EQ(RunUrl("https://example.com/cohort/", alert),
            "https://example.com/cohort/?p=acme%2Fp&run=r%201");
}

TEST(WebhookRetryTest, BackoffDoublesUpToTheCap) {
  WebhookRetryPolicy p{.max_attempts = 5, .initial_ms = 1000, .max_ms = 5000};
  EXPECT_EQ(RetryDelayMs(p, 1), 1000);
  EXPECT_EQ(RetryDelayMs(p, 2), 2000);
  EXPECT_EQ(RetryDelayMs(p, 3), 4000);
  EXPECT_EQ(RetryDelayMs(p, 4), 5000);
  EXPECT_EQ(RetryDelayMs(p, 60), 5000);  // no overflow
  WebhookRetryPolicy d;
  EXPECT_EQ(RetryDelayMs(d, 1), 5000);
  EXPECT_EQ(RetryDelayMs(d, 10), 2'560'000);
  EXPECT_EQ(RetryDelayMs(d, 11), 3'600'000);
}

TEST(WebhookRetryTest, OnlyTransientAnswersAreRetried) {
  for (int s : {408, 425, 429, 500, 502, 503, 504}) EXPECT_TRUE(RetryableStatus(s)) << s;
  for (int s : {301, 400, 401, 403, 404, 410, 422}) EXPECT_FALSE(RetryableStatus(s)) << s;
}

}  // namespace
}  // namespace cohort::server::webhooks
