#include "store/run_state.h"

#include <algorithm>

namespace cohort::store {
namespace {

bool IsControlling(const WriterRecord& w) { return w.primary || w.update_finish_state; }
int64_t EndTime(const WriterRecord& w) { return w.finished_ms.value_or(w.heartbeat_ms); }

}  // namespace

DerivedRunState DeriveRunState(const std::vector<WriterRecord>& writers, RunState current) {
  bool any_controlling = false;
  bool controlling_running = false;
  bool any_running = false;
  const WriterRecord* last_ended = nullptr;
  for (const WriterRecord& w : writers) {
    bool running = !IsTerminal(w.state);
    any_running = any_running || running;
    if (!IsControlling(w)) continue;
    any_controlling = true;
    if (running) {
      controlling_running = true;
      continue;
    }
    // The controlling writer that ended last; on equal end times the later one in `writers`.
    if (last_ended == nullptr || EndTime(w) >= EndTime(*last_ended)) last_ended = &w;
  }

  DerivedRunState out;
  if (any_controlling) {
    if (controlling_running) {
      out.state = RunState::kRunning;
      return out;
    }
    out.state = last_ended->state;
    out.exit_code = last_ended->exit_code;
    out.finished_ms = EndTime(*last_ended);
    return out;
  }
  // No controlling writer: workers keep a run alive but never end it.
  out.state = any_running ? RunState::kRunning : current;
  return out;
}

std::optional<DerivedRunState> DeriveOrphanedRunEnd(const std::vector<WriterRecord>& writers) {
  auto severity = [](RunState s) {
    switch (s) {
      case RunState::kCrashed:
        return 4;
      case RunState::kFailed:
        return 3;
      case RunState::kKilled:
        return 2;
      case RunState::kPreempted:
        return 1;
      default:
        return 0;
    }
  };
  const WriterRecord* worst = nullptr;
  int64_t last_end = 0;
  for (const WriterRecord& w : writers) {
    if (!IsTerminal(w.state) || IsControlling(w)) return std::nullopt;
    last_end = std::max(last_end, EndTime(w));
    if (worst == nullptr || severity(w.state) > severity(worst->state) ||
        (severity(w.state) == severity(worst->state) && EndTime(w) >= EndTime(*worst))) {
      worst = &w;
    }
  }
  if (worst == nullptr || worst->state == RunState::kFinished) return std::nullopt;
  DerivedRunState out;
  out.state = worst->state;
  out.exit_code = worst->exit_code;
  out.finished_ms = last_end;
  return out;
}

int64_t JoinNextStep(const WriterRecord& joined, const std::vector<WriterRecord>& writers) {
  int64_t next = joined.next_step;
  if (!joined.primary) return next;
  for (const WriterRecord& w : writers) {
    if (w.primary && w.label != joined.label) next = std::max(next, w.next_step);
  }
  return next;
}

RunState StateForExitCode(int exit_code) {
  return exit_code == 0 ? RunState::kFinished : RunState::kFailed;
}

}  // namespace cohort::store
