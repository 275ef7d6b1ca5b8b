// Fuzz target: the compat GraphQL parser (src/server/compat/graphql_parser.h) on arbitrary
// documents. Properties: it never crashes or recurses without bound (ASan catches a stack
// overflow), an error is kInvalidArgument with a message, and a parsed document respects the
// documented limits (nesting depth).
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "server/compat/graphql_parser.h"

namespace gql = cohort::compat::gql;

namespace {

int Depth(const gql::Value& v) {
  int d = 0;
  for (const auto& item : v.list) d = std::max(d, Depth(item));
  for (const auto& field : v.fields) d = std::max(d, Depth(field.value));
  return (v.list.empty() && v.fields.empty()) ? 0 : d + 1;
}

int Depth(const std::vector<gql::Selection>& set) {
  int d = 0;
  for (const auto& s : set) {
    for (const auto& a : s.args) d = std::max(d, Depth(a.value));
    d = std::max(d, Depth(s.selections));
  }
  return set.empty() ? 0 : d + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gql::ParseLimits limits;
  limits.max_depth = 16;
  limits.max_tokens = 5000;
  auto doc = gql::Parse(text, limits);
  if (!doc.ok()) {
    FUZZ_CHECK(doc.status().code() == cohort::StatusCode::kInvalidArgument, "code %s",
               doc.status().ToString().c_str());
    FUZZ_CHECK(!doc.status().message().empty(), "an error names the problem");
    return 0;
  }
  for (const auto& op : doc->operations) {
    FUZZ_CHECK(Depth(op.selections) <= limits.max_depth + 1, "depth %d", Depth(op.selections));
    FUZZ_CHECK(op.type == "query" || op.type == "mutation" || op.type == "subscription",
               "operation type '%s'", op.type.c_str());
  }
  for (const auto& f : doc->fragments) {
    FUZZ_CHECK(Depth(f.selections) <= limits.max_depth + 1, "depth %d", Depth(f.selections));
    FUZZ_CHECK(doc->FindFragment(f.name) != nullptr, "fragment %s not found", f.name.c_str());
  }
  return 0;
}
