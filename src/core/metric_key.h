// The one rule for metric keys, applied by every tier that accepts them: the client library
// (C++: the value is dropped and counted; Python: ValueError naming the key) before a value is
// acknowledged, and the server's decoders (400 naming the place). A key is 1..256 bytes of
// valid UTF-8 without NUL bytes and does not start with "system/" (limits.h). Pure; thread-safe.
#pragma once

#include <string_view>

namespace cohort {

// Why `key` cannot be a metric key ("is empty", "is longer than 256 bytes", ...), or an empty
// view when it can.
std::string_view InvalidKeyReason(std::string_view key);

}  // namespace cohort
