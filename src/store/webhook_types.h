// Alert webhooks (docs/api.md "Alert webhooks"): where a project's alerts are sent, and the
// delivery log — one row per (webhook, alert event) with its state, attempts and last error.
// Plain values, no behaviour; WebhookStore (store.h) keeps them, the server's webhook
// dispatcher (server/alerts/webhook_dispatcher.h) fills and sends them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cohort::store {

struct WebhookRecord {
  int64_t id = 0;
  std::string entity;
  std::string project;
  std::string name;       // unique per project
  std::string url;        // http:// or https://
  std::string format;     // "generic" | "slack" | "discord"
  std::string secret;     // write-only (the API shows has_secret); "" = unsigned
  std::string min_level;  // "INFO" | "WARN" | "ERROR": alerts below it are not sent
  bool enabled = true;
  int64_t created_ms = 0;  // a webhook is sent the events created at or after it
};

// One alert event to send to one webhook: what the dispatcher enqueues.
struct DeliveryIntent {
  int64_t webhook_id = 0;
  std::string entity;  // the event's (and webhook's) project
  std::string project;
  int64_t event_id = 0;
  int64_t alert_id = 0;
  std::string event_kind;  // "opened" | "resolved"
  int64_t now_ms = 0;      // created_ms, and when it is first due
};

struct DeliveryRecord {
  int64_t id = 0;
  int64_t webhook_id = 0;
  std::string entity;
  std::string project;
  int64_t event_id = 0;
  int64_t alert_id = 0;
  std::string event_kind;
  std::string state;  // "pending" | "delivered" | "failed"
  int64_t attempts = 0;
  int64_t next_attempt_ms = 0;
  std::optional<int64_t> last_status;  // the receiver's HTTP status; none: no answer
  std::string last_error;
  std::string claimed_by;  // the server sending it now ("" = none)
  int64_t claim_until_ms = 0;
  std::optional<int64_t> delivered_ms;
  int64_t created_ms = 0;
};

// The outcome of one attempt, recorded by FinishDelivery.
struct DeliveryAttempt {
  bool delivered = false;         // a 2xx answer
  std::optional<int64_t> status;  // the HTTP status when an answer came
  std::string error;              // why it failed ("" when delivered)
  int64_t now_ms = 0;
  // When not delivered: the next attempt's time, or nullopt to give up (state 'failed').
  std::optional<int64_t> retry_at_ms;
};

}  // namespace cohort::store
