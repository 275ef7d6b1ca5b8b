// Alerts as a Store keeps them (docs/api.md, "Alerts"): rules per project, alerts (one open per
// condition and writer until it clears) and the outbox of their events (opened / resolved) that
// delivery reads in id order. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cohort::store {

// Alerts a project may open per minute (rule and code alerts together, every server of the
// store counted): above it RaiseAlert refuses to open more (kResourceExhausted); an alert already
// open is still bumped, and a raise with `counts_against_limit` false (a writer that ended badly:
// rare, and never to be lost) always opens, though it counts. The one place this limit is
// defined.
inline constexpr int64_t kMaxAlertsOpenedPerProjectPerMinute = 60;

// One condition seen now: opens an alert or bumps the one open for the same key.
struct AlertRaise {
  std::string entity, project, run_id, writer_label;  // writer_label "" = the run
  std::optional<int64_t> rule_id;                     // null for alerts raised by code
  std::string source;                                 // "rule" | "code"
  std::string condition_key;                          // code alerts: "code:" + title
  std::string level = "WARN";                         // INFO | WARN | ERROR
  std::string title, text;
  std::string evidence_json = "{}";
  int64_t now_ms = 0;
  bool counts_against_limit = true;  // false: opened even past the project's rate limit
};

struct AlertRecord {
  int64_t id = 0;
  std::string entity, project, run_id, writer_label;
  std::optional<int64_t> rule_id;
  std::string source, condition_key, level, title, text;
  std::string evidence_json = "{}";
  std::string state;  // "open" | "resolved"
  int64_t opened_ms = 0;
  std::optional<int64_t> resolved_ms, acked_ms;
  std::optional<std::string> acked_by;
  int64_t last_seen_ms = 0;
  int64_t count = 1;  // how many times the condition was raised while open
};

struct AlertEvent {
  int64_t id = 0;
  std::string entity, project;
  int64_t alert_id = 0;
  std::string kind;  // "opened" | "resolved"
  int64_t created_ms = 0;
};

// ListAlerts' filters; newest (by id) first.
struct AlertQuery {
  std::string entity, project;
  std::optional<std::string> state, level, run_id, writer_label;
  int limit = 100;
};

// An open alert of a rule (ListOpenRuleAlerts), with its rule's kind and whether what it is about
// still runs: its writer, or its run for a run-level alert (writer_label "").
struct OpenRuleAlert {
  AlertRecord alert;
  std::string rule_kind;
  bool live = false;
};

// A rule of a project: kind and its spec (JSON; checked by the server, server/alerts), level of
// the alerts it raises.
struct AlertRule {
  int64_t id = 0;
  std::string entity, project, name, kind;
  std::string spec_json = "{}";
  std::string level = "WARN";
  bool enabled = true;
  bool builtin = false;
  int64_t created_ms = 0, updated_ms = 0;
};

}  // namespace cohort::store
