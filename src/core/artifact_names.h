// The rules of artifact names, aliases and paths (docs/artifacts.md, "Names"), defined once: the
// client checks them at the call, the agent when it takes an intent over, the server (Cohort's
// API and the W&B layer) and the store before anything is written.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort {

inline constexpr size_t kMaxRelativePathBytes = 1024;

// A collection, type or alias name: 1 to limits::kMaxArtifactNameBytes bytes of
// A-Z a-z 0-9 . _ -, not starting with '.'. `what` names the field in the error.
Status ValidateArtifactName(std::string_view what, std::string_view name);

// Names that are not aliases a user may set: "latest" (moved by the server itself), "versions",
// "aliases" and "v" followed by digits (version names, "v01" included).
bool IsReservedAlias(std::string_view alias);

// An alias a user may set: a valid name that is not reserved.
Status ValidateAliasName(std::string_view alias);

// A path inside a version or a run's file name: a relative '/'-separated path of 1 to
// kMaxRelativePathBytes bytes of UTF-8, no empty, "." or ".." segment, no leading '/', no
// backslash, no control character. `what` names it in the error.
Status ValidateRelativePath(std::string_view what, std::string_view path);

// "v<digits>" (no leading zero) -> the version index; nullopt for anything else (an alias).
std::optional<int64_t> ParseVersionName(std::string_view name);
std::string VersionName(int64_t index);

}  // namespace cohort
