#include "server/webhooks/webhook_payload.h"

#include "core/hmac_sha256.h"
#include "core/text_encoding.h"
#include "core/utf8.h"
#include "store/webhook_checks.h"

namespace cohort::server::webhooks {
namespace {

namespace bj = boost::json;

std::string Str(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return std::string(v->as_string());
  return bj::serialize(*v);
}

// At most `max` bytes of `s`, cut on a character boundary, "…" marking a cut.
std::string Clip(std::string_view s, size_t max) {
  std::string out;
  if (s.size() <= max) {
    utf8::AppendSanitized(s, max, &out);
    return out;
  }
  utf8::AppendSanitized(s, max - 3, &out);
  out += "\xE2\x80\xA6";
  return out;
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Slack's mrkdwn control characters.
std::string SlackEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

// `raw` escaped for mrkdwn, at most `max` bytes: cut after escaping (an escape grows a character
// up to five times: clipping before it let a section pass Slack's limit), never inside an
// escape or a character, "…" marking a cut.
std::string SlackEscapeClipped(std::string_view raw, size_t max) {
  std::string s;
  utf8::AppendSanitized(raw, raw.size(), &s);
  std::string out = SlackEscape(s);
  if (out.size() <= max) return out;
  out.clear();
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    const std::string piece = SlackEscape(s.substr(i, n));
    if (out.size() + piece.size() > max - 3) break;
    out += piece;
    i += n;
  }
  return out + "\xE2\x80\xA6";
}

bool Resolved(std::string_view event) { return event == "resolved"; }

// "[ERROR] title" / "Resolved: title" / "[INFO] title (test)".
std::string Headline(std::string_view event, const bj::object& alert) {
  const std::string title = Str(alert, "title");
  if (Resolved(event)) return "Resolved: " + title;
  std::string h = "[" + Str(alert, "level") + "] " + title;
  if (event == "test") h += " (test)";
  return h;
}

// "entity/project · run r1 · writer rank_3".
std::string Where(const bj::object& alert) {
  std::string w = Str(alert, "entity") + "/" + Str(alert, "project");
  if (std::string run = Str(alert, "run"); !run.empty()) w += " \xC2\xB7 run " + run;
  if (std::string writer = Str(alert, "writer"); !writer.empty()) {
    w += " \xC2\xB7 writer " + writer;
  }
  return w;
}

int DiscordColor(std::string_view event, const bj::object& alert) {
  if (Resolved(event)) return 0x2ECC71;
  const std::string level = Str(alert, "level");
  if (level == "ERROR") return 0xE74C3C;
  if (level == "WARN") return 0xF39C12;
  return 0x3498DB;
}

}  // namespace

std::string RunUrl(std::string_view base_url, const bj::object& alert) {
  if (base_url.empty()) return "";
  std::string base(base_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url =
      base + "/?p=" + UrlEncode(Str(alert, "entity")) + "%2F" + UrlEncode(Str(alert, "project"));
  if (std::string run = Str(alert, "run"); !run.empty()) url += "&run=" + UrlEncode(run);
  return url;
}

Status ValidatePublicUrl(std::string_view url) {
  const Status s = store::ValidateWebhookUrl(url);
  if (!s.ok() || url.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument(
        "--public-url: expected the web UI's address, an http:// or https:// URL with a host "
        "and no query (e.g. https://cohort.example.com), got '" +
        std::string(url) + "'");
  }
  return Status::Ok();
}

std::string GenericPayload(std::string_view event, const bj::object& alert,
                           std::string_view run_url) {
  bj::object o;
  o["version"] = kGenericPayloadVersion;
  o["event"] = event;
  o["alert"] = alert;
  if (run_url.empty()) {
    o["run_url"] = nullptr;
  } else {
    o["run_url"] = run_url;
  }
  return bj::serialize(o);
}

std::string SlackPayload(std::string_view event, const bj::object& alert,
                         std::string_view run_url) {
  const std::string headline = Headline(event, alert);
  const std::string text = Str(alert, "text");
  // Slack: a section's text is at most 3000 characters, a context element's 2000. Every text is
  // escaped, the notification's too (a title "<!channel>" would mention the whole channel).
  std::string section = "*" + SlackEscapeClipped(headline, 300) + "*";
  if (!text.empty()) section += "\n" + SlackEscapeClipped(text, 2400);
  std::string context = SlackEscapeClipped(Where(alert), 1000);
  if (!run_url.empty()) context += " \xC2\xB7 <" + std::string(run_url) + "|open the run>";
  bj::array blocks;
  blocks.push_back(
      bj::object{{"type", "section"}, {"text", bj::object{{"type", "mrkdwn"}, {"text", section}}}});
  blocks.push_back(bj::object{
      {"type", "context"},
      {"elements", bj::array{bj::object{{"type", "mrkdwn"}, {"text", Clip(context, 1900)}}}}});
  bj::object o;
  o["text"] =
      SlackEscapeClipped(headline + " \xE2\x80\x94 " + Where(alert), 2000);  // notifications
  o["blocks"] = std::move(blocks);
  return bj::serialize(o);
}

std::string DiscordPayload(std::string_view event, const bj::object& alert,
                           std::string_view run_url) {
  const std::string headline = Headline(event, alert);
  bj::object embed;
  embed["title"] = Clip(headline, 256);
  if (std::string text = Str(alert, "text"); !text.empty()) {
    embed["description"] = Clip(text, 4000);
  }
  if (!run_url.empty()) embed["url"] = run_url;
  embed["color"] = DiscordColor(event, alert);
  bj::array fields;
  auto field = [&](const char* name, std::string value) {
    if (!value.empty()) {
      fields.push_back(bj::object{{"name", name}, {"value", Clip(value, 1000)}, {"inline", true}});
    }
  };
  field("Project", Str(alert, "entity") + "/" + Str(alert, "project"));
  field("Run", Str(alert, "run"));
  field("Writer", Str(alert, "writer"));
  field("Level", Str(alert, "level"));
  embed["fields"] = std::move(fields);
  bj::object o;
  o["content"] = Clip(headline, 2000);
  o["embeds"] = bj::array{std::move(embed)};
  o["allowed_mentions"] = bj::object{{"parse", bj::array{}}};
  return bj::serialize(o);
}

std::string FormatPayload(std::string_view format, std::string_view event, const bj::object& alert,
                          std::string_view run_url) {
  if (format == "slack") return SlackPayload(event, alert, run_url);
  if (format == "discord") return DiscordPayload(event, alert, run_url);
  return GenericPayload(event, alert, run_url);
}

std::string SignatureValue(std::string_view secret, std::string_view body) {
  return "sha256=" + HmacSha256Hex(secret, body);
}

std::vector<std::string> PayloadHeaders(std::string_view format, std::string_view event,
                                        int64_t delivery_id, std::string_view secret,
                                        std::string_view body) {
  std::vector<std::string> h = {"Content-Type: application/json",
                                "X-Cohort-Event: " + std::string(event)};
  if (delivery_id > 0) h.push_back("X-Cohort-Delivery: " + std::to_string(delivery_id));
  if (format == "generic" && !secret.empty()) {
    h.push_back(std::string(kSignatureHeader) + ": " + SignatureValue(secret, body));
  }
  return h;
}

bj::object TestAlert(std::string_view entity, std::string_view project, int64_t now_ms) {
  return bj::object{{"id", 0},
                    {"entity", entity},
                    {"project", project},
                    {"run", nullptr},
                    {"writer", nullptr},
                    {"rule_id", nullptr},
                    {"source", "test"},
                    {"condition", "test"},
                    {"level", "INFO"},
                    {"title", "Test alert from Cohort"},
                    {"text", "This webhook is set up: Cohort will send alerts of project " +
                                 std::string(entity) + "/" + std::string(project) + " here."},
                    {"evidence", bj::object{}},
                    {"state", "open"},
                    {"opened_ms", now_ms},
                    {"resolved_ms", nullptr},
                    {"acked_ms", nullptr},
                    {"acked_by", nullptr},
                    {"last_seen_ms", now_ms},
                    {"count", 1}};
}

}  // namespace cohort::server::webhooks
