// Alerts of the vendor's clients (docs/compat.md, "Alerts"): `run.alert(title, text, level,
// wait_duration)` sends the mutation notifyScriptableRunAlert(input: {entityName, projectName,
// runName, title, text, severity, waitDuration}), stored as an alert raised by code of the
// client's writer, as Cohort's own SDK raises them (store RaiseAlert, source "code", condition
// "code:" + title). waitDuration (ms) is applied here, as the vendor's server does: an alert of
// the same writer and title seen less than that long ago is not raised again.
//
// Threading: resolvers live for one request; the store calls are thread-safe.
#pragma once

#include <string>

#include "server/compat/graphql_exec.h"
#include "server/compat/resolvers.h"

namespace cohort::compat {

bool IsAlertMutation(const std::string& name);
Result<gql::Resolved> ResolveAlertMutation(GqlContext* c, const gql::FieldInfo& f);

}  // namespace cohort::compat
