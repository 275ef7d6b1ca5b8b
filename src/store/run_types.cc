#include "store/run_types.h"

#include "store/meta_types.h"

#include <array>

namespace cohort::store {
namespace {

constexpr std::array<std::string_view, 7> kStateNames = {"pending", "running", "finished", "failed",
                                                         "crashed", "killed",  "preempted"};

}  // namespace

std::string_view RunStateName(RunState s) {
  size_t i = static_cast<size_t>(s);
  return i < kStateNames.size() ? kStateNames[i] : "unknown";
}

std::optional<RunState> ParseRunState(std::string_view s) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (kStateNames[i] == s) return static_cast<RunState>(i);
  }
  return std::nullopt;
}

const char* SessionKindName(SessionKind kind) {
  return kind == SessionKind::kLoginToken ? "login" : "session";
}

}  // namespace cohort::store
