// Checks of views, API keys, run files and batch rows that every Store backend and every decoder
// applies before writing, and
// the errors they return about them, so that all backends word them the same way (as
// store/run_ref.h does for runs and writers). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "cohort/status.h"
#include "store/ingest_batch.h"
#include "store/meta_types.h"
#include "store/run_types.h"

namespace cohort::store {

// InvalidArgument unless entity, project and name are set (a name of at most kMaxViewNameBytes
// without control characters) and the spec is a JSON object; PayloadTooLarge for a spec over
// kMaxViewSpecBytes (core/limits.h).
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

// InvalidArgument naming `where` (e.g. "media[3]") and the field, for a row no backend may store:
// a negative step, a histogram histogram::InvalidReason refuses.
Status CheckHistogramPoint(std::string_view where, const HistogramPoint& h);
// The same for a media row: its type, index, digest, size, MIME type, dimensions and caption
// (batch::InvalidMediaReason). A row named by `path` (a vendor file before its upload) has no
// digest and size 0 yet; its path is 1 to limits::kMaxMediaPathBytes bytes without NUL.
Status CheckMediaPoint(std::string_view where, const MediaPoint& m);

// AlreadyExists: another writer of the run has the label `label` (RenameWriter).
Status WriterLabelTaken(const RunRef& ref, const std::string& label);

}  // namespace cohort::store
