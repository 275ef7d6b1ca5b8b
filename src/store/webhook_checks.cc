#include "store/webhook_checks.h"

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
