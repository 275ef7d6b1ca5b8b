// The syntax of the read API's list parameters (`keys=`, `writers=`, `labels=`, `runs=`,
// `state=`; docs/api.md "List parameters"), shared by the server, which reads them, and the CLI,
// which writes them (and reads its own --keys / --writers options the same way). Items are
// separated by ','; inside an item, ',' is written "\," and '\' is written "\\". A '\' before
// any other character, or at the end, stands for itself; empty items are left out. Metric keys
// and writer labels may hold both characters (`acc,top5`, `node,1`), so every client escapes
// each item it names. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cohort {

// The items of a list parameter, unescaped, in order; empty ones left out ("" -> {}).
std::vector<std::string> SplitListParam(std::string_view s);

// `items` as one list parameter: each escaped, joined with ','. SplitListParam(JoinListParam(v))
// is v for any v without empty items.
std::string JoinListParam(const std::vector<std::string>& items);

}  // namespace cohort
