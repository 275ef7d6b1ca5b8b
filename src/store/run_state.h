// Run state derivation (DESIGN.md section 3): a run's state from its writers' states.
// Pure functions; thread-safe.
//
// Controlling writers are those with primary or update_finish_state set. While any controlling
// writer runs, the run is running. When all controlling writers have ended, the run takes the
// state and exit code of the controlling writer that ended last. With no controlling writer
// (workers that joined before the primary), the run is running while any writer runs and keeps
// its current state otherwise: workers never end a run.
#pragma once

#include <optional>
#include <vector>

#include "store/run_types.h"

namespace cohort::store {

struct DerivedRunState {
  RunState state = RunState::kPending;
  std::optional<int> exit_code;
  std::optional<int64_t> finished_ms;
};

DerivedRunState DeriveRunState(const std::vector<WriterRecord>& writers, RunState current);

// The end of a run whose writers all ended without a controlling writer among them (a shared
// run whose primary never joined: it died before its init reached the server), once the
// heartbeat sweep finds it silent for a heartbeat timeout: the most severe end among the
// writers (crashed, then failed, killed, preempted, finished; the latest on a tie) with its exit
// code, at the last end. A controlling writer that joins later makes the run running again
// (DeriveRunState). nullopt while a writer runs, a controlling writer exists, or none exists.
// Only an end worse than finished ends such a run: writers that all finished may be the first
// half of a job synced node by node (the primary's node not yet), and a run left running is
// what they would see then.
std::optional<DerivedRunState> DeriveOrphanedRunEnd(const std::vector<WriterRecord>& writers);

// A writer marked crashed without an exit code is running again when it heartbeats at least this
// long after the mark (WriterStore::Heartbeat): a heartbeat sent before the process died, written
// late by another server (whose clock may run a little ahead), never revives it.
inline constexpr int64_t kReviveAfterCrashMs = 30'000;

// The step a writer that joins (or re-joins) continues at: one past the highest step stored for
// it (`joined.next_step`), or, for a primary writer, one past the highest step of any other
// primary writer of the run (`writers`, the run's writers; `joined` among them or not) when that
// is higher. A run of its own (not shared) has primary writers only: when it is resumed by a
// process with another label (the default label is `<host>-<random>`), its steps go on after
// those of the earlier process rather than again from 0. In a shared run only rank 0 is primary:
// each rank keeps its own steps. Workers (not primary) keep their own steps.
int64_t JoinNextStep(const WriterRecord& joined, const std::vector<WriterRecord>& writers);

// The writer state that an exit code means when the client did not say: 0 -> finished,
// otherwise failed.
RunState StateForExitCode(int exit_code);

}  // namespace cohort::store
