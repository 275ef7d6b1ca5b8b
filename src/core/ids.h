// Random identifiers: run ids (short base-36), API keys and secrets. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::ids {

// A random lower-case base-36 string of `n` characters (run ids use 8).
std::string RandomBase36(size_t n);
// A random hex string of `bytes` random bytes (2*bytes characters), from the OS CSPRNG.
std::string RandomHex(size_t bytes);
// True when `s` is a valid user-supplied id: 1..limits::kMaxIdBytes chars of [A-Za-z0-9_.-].
bool IsValidId(std::string_view s);
// The project name rule, the same in the server (which refuses a run under another name) and
// the client library (which refuses it at init, offline runs included, rather than keep data
// the server will refuse): IsValidId; kInvalidArgument naming the name and the rule.
Status CheckProjectName(std::string_view project);

}  // namespace cohort::ids
