#include "store/webhook_checks.h"

#include <cctype>

namespace cohort::store {

int AlertLevelRank(std::string_view level) {
  if (level == "INFO") return 0;
  if (level == "WARN") return 1;
  if (level == "ERROR") return 2;
  return -1;
}

bool IsWebhookFormat(std::string_view format) {
  return format == "generic" || format == "slack" || format == "discord";
}

Status ValidateWebhookUrl(std::string_view url) {
  auto bad = [](std::string_view why) {
    return Status::InvalidArgument("url: " + std::string(why));
  };
  if (url.size() > kMaxWebhookUrlBytes) {
    return bad("longer than " + std::to_string(kMaxWebhookUrlBytes) + " bytes");
  }
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return bad("must be an http:// or https:// URL");
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return bad("must not contain spaces or control characters");
    }
  }
  const size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  if (authority.empty() || authority.front() == ':') return bad("has no host");
  // The host and port as curl reads them: a URL it cannot parse was accepted, then retried for
  // hours at every alert ("URL using bad/illegal format").
  std::string_view host = authority, port;
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("has a '[' without ']' in its host");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("has characters after ']' in its host");
    if (!after.empty()) port = after.substr(1);
    if (host.empty()) return bad("has no host");
    for (char c : host) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.' && c != '%') {
        return bad("has an IPv6 host with a character other than hex digits, ':' and '.'");
      }
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    for (char c : host) {
      const auto u = static_cast<unsigned char>(c);
      if (!std::isalnum(u) && c != '-' && c != '.' && c != '_' && u < 0x80) {
        return bad("has a host with '" + std::string(1, c) +
                   "' (letters, digits, '-', '.' and '_' only; IPv6 addresses in [ ])");
      }
    }
  }
  if (!port.empty()) {
    int n = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || (n = n * 10 + (c - '0')) > 65535) {
        return bad("has a port that is not a number from 1 to 65535");
      }
    }
    if (n == 0) return bad("has a port that is not a number from 1 to 65535");
  }
  return Status::Ok();
}

Status ValidateWebhook(const WebhookRecord& w) {
  if (w.entity.empty()) return Status::InvalidArgument("entity: must not be empty");
  if (w.project.empty()) return Status::InvalidArgument("project: must not be empty");
  if (w.name.empty() || w.name.size() > kMaxWebhookNameBytes) {
    return Status::InvalidArgument("name: must have 1 to " + std::to_string(kMaxWebhookNameBytes) +
                                   " bytes");
  }
  COHORT_RETURN_IF_ERROR(ValidateWebhookUrl(w.url));
  if (!IsWebhookFormat(w.format)) {
    return Status::InvalidArgument("format: must be \"generic\", \"slack\" or \"discord\"");
  }
  if (AlertLevelRank(w.min_level) < 0) {
    return Status::InvalidArgument("min_level: must be \"INFO\", \"WARN\" or \"ERROR\"");
  }
  if (w.secret.size() > kMaxWebhookSecretBytes) {
    return Status::InvalidArgument("secret: longer than " + std::to_string(kMaxWebhookSecretBytes) +
                                   " bytes");
  }
  return Status::Ok();
}

Status WebhookNameTaken(const WebhookRecord& w) {
  return Status::AlreadyExists("name: a webhook named '" + w.name + "' exists in project '" +
                               w.entity + "/" + w.project + "'");
}

Status WebhookNotFound(const std::string& entity, const std::string& project, int64_t id) {
  return Status::NotFound("webhook " + std::to_string(id) + " of project '" + entity + "/" +
                          project + "' not found");
}

}  // namespace cohort::store
