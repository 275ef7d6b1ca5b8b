// Checks of views, API keys and run files that every Store backend applies before writing, and
// the errors they return about them, so that all backends word them the same way (as
// store/run_ref.h does for runs and writers). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "cohort/status.h"
#include "store/meta_types.h"
#include "store/run_types.h"

namespace cohort::store {

// InvalidArgument unless entity, project and name are set and the spec is a JSON object.
Status ValidateView(const ViewRecord& view);
// AlreadyExists: another view of the project has the name.
Status ViewNameTaken(const ViewRecord& view);
Status ViewNotFound(const std::string& entity, const std::string& project, int64_t id);

// InvalidArgument unless entity and hash are set.
Status ValidateApiKey(const ApiKeyRecord& key);
// AlreadyExists: a key with the hash exists.
Status ApiKeyHashTaken();
Status ApiKeyNotFound(const std::string& entity, int64_t id);

// InvalidArgument unless hash is set and the session expires after it was created.
Status ValidateSession(const SessionRecord& s);
// NotFound: the key a session or login token is for does not exist or is revoked.
Status SessionKeyGone(int64_t key_id);
// NotFound: a login token that is unknown, used, expired, or whose key is revoked.
Status LoginTokenInvalid();
// NotFound: no live session with that hash.
Status SessionNotFound();

// InvalidArgument unless the name is 1-1024 bytes without control characters.
Status ValidateFileName(const std::string& name);
Status RunFileNotFound(const RunRef& ref, const std::string& name);

// AlreadyExists: another writer of the run has the label `label` (RenameWriter).
Status WriterLabelTaken(const RunRef& ref, const std::string& label);

}  // namespace cohort::store
