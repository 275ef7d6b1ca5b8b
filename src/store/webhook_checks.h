// Checks of alert webhooks that every Store backend applies before writing (and the API before
// it calls the store), and the errors about them, worded once. An InvalidArgument's message
// starts with the field it names ("url: ..."). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "store/webhook_types.h"

namespace cohort::store {

inline constexpr size_t kMaxWebhookUrlBytes = 2048;
inline constexpr size_t kMaxWebhookSecretBytes = 256;
inline constexpr size_t kMaxWebhookNameBytes = 256;

// The rank of an alert level: INFO 0, WARN 1, ERROR 2; -1 for anything else.
int AlertLevelRank(std::string_view level);
// Whether `format` is "generic", "slack" or "discord".
bool IsWebhookFormat(std::string_view format);
// InvalidArgument naming the field ("url: ...") unless the URL is http:// or https:// with a
// host, without spaces or control characters, at most kMaxWebhookUrlBytes.
Status ValidateWebhookUrl(std::string_view url);
// InvalidArgument naming the first bad field: entity, project, name (1..256 bytes), url,
// format, min_level, secret (<= 256 bytes).
Status ValidateWebhook(const WebhookRecord& w);

Status WebhookNameTaken(const WebhookRecord& w);
Status WebhookNotFound(const std::string& entity, const std::string& project, int64_t id);

}  // namespace cohort::store
