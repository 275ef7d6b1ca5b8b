// Alerts of the vendor's clients (docs/compat.md, "Alerts"): `run.alert(title, text, level,
// wait_duration)` sends the mutation notifyScriptableRunAlert(input: {entityName, projectName,
// runName, title, text, severity, waitDuration}), stored as an alert raised by code of the
// client's writer, as Cohort's own SDK raises them (store RaiseAlert, source "code", condition
// "code:" + title). waitDuration (ms) is applied here, as the vendor's server does: an alert of
// the same writer and title seen less than that long ago is not raised again.
//
// Threading: resolvers live for one request; the store calls are thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "server/compat/graphql_exec.h"
#include "server/compat/resolvers.h"

namespace cohort::compat {

bool IsAlertMutation(const std::string& name);
// The time that identifies a vendor alert call: the server's time (the mutation carries none),
// made strictly increasing within the process, so that two calls within one millisecond are two
// alerts rather than one call retried (store RaiseAlert: the same time_ms is a retry).
int64_t AlertCallTimeMs(int64_t now_ms);
Result<gql::Resolved> ResolveAlertMutation(GqlContext* c, const gql::FieldInfo& f);

}  // namespace cohort::compat
