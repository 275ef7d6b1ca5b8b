// UTF-8 checks and repair for text that crosses a format boundary (metric keys, console lines,
// file names). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cohort::utf8 {

// True when `s` is well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF
// (what a JSON parser requires of strings).
bool IsValid(std::string_view s);

// Appends `s` to `out` with every invalid sequence replaced by U+FFFD, cut on a character
// boundary so that at most `max_bytes` bytes are appended.
void AppendSanitized(std::string_view s, size_t max_bytes, std::string* out);

}  // namespace cohort::utf8
