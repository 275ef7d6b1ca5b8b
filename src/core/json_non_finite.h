// The W&B clients (and Python's json module) write non-finite floats as bare NaN, Infinity and
// -Infinity, which is not JSON. QuoteNonFinite turns such text into JSON holding them the way
// Cohort writes them everywhere (core/json.h, docs/api.md): the strings "NaN", "Infinity",
// "-Infinity". Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace cohort::json {

// Rewrites bare NaN / Infinity / -Infinity tokens outside strings as the strings "NaN",
// "Infinity", "-Infinity". Text without such tokens is returned unchanged.
std::string QuoteNonFinite(std::string_view json);

}  // namespace cohort::json
