// JSON of alerts and alert rules (docs/api.md, "Alerts"), and the 400 answer that names the
// field a bad request got wrong. Thread-safe (pure functions).
#pragma once

#include <string>

#include "core/json.h"
#include "server/http/message.h"
#include "store/alert_types.h"

namespace cohort::api {

// AlertJSON: {"id","entity","project","run","writer","rule_id","source","condition","level",
// "title","text","evidence":{...},"state","opened_ms","resolved_ms","acked_ms","acked_by",
// "last_seen_ms","count"} (null for absent).
boost::json::value AlertToJson(const store::AlertRecord& a);
// {"id","name","kind","spec":{...},"level","enabled","builtin","created_ms","updated_ms"}.
boost::json::value AlertRuleToJson(const store::AlertRule& r);

bool IsAlertLevel(const std::string& level);

// ErrorResponse(s), plus "field" (top level) when `s` is kInvalidArgument with a message
// "<field>: ..." (the field path as FieldReader writes it: "spec.key", "title").
http::HttpResponse FieldErrorResponse(const Status& s);

}  // namespace cohort::api
