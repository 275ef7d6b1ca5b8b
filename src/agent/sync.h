// `cohort sync [PATH...]`: uploads writer WALs left on disk (offline runs, or runs whose agent
// could not reach the server before it gave up) and removes those that are complete.
//
// A PATH may be a writer directory (it holds meta.json), a run directory or a whole data
// directory; none means the default data directory (agent_paths.h). A PATH with no writer
// directory under it (and not an agent's data directory, whose writers may all be uploaded) is
// an error: the wrong directory or a typo, not a sync that succeeded. Uploading is idempotent:
// records carry their sequence numbers, the server stores each (writer, seq) once, and what was
// acknowledged is never sent again, so running sync twice (or after an interrupted sync) never
// duplicates data. Directories held by a live process (an agent or a training process) are
// skipped and reported; one held by an agent whose training process ended is waited for first
// (SyncOptions::release_wait_s).
//
// Thread-safe (no shared state); shows progress on stderr when asked: a bar on a terminal, else a
// line every 5 seconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::agent {

struct SyncOptions {
  std::string base_url;  // upload there instead of each writer's recorded server
  std::string api_key;   // use this key instead of each writer's recorded key
  bool progress = true;  // progress on stderr (a bar only when it is a terminal)
  // Give up when no record could be uploaded for this long (server down). 0: never.
  double give_up_after_s = 60;
  // A writer held by an agent whose training processes have all ended (none alive in its
  // clients.json) is waited for this long before it is skipped as in use: the agent lets go of
  // it a moment after the process exited (`python train.py && cohort sync`). One deadline for
  // the whole sync, from the first such wait: later writers are not waited for again once it
  // passed. 0: no wait.
  double release_wait_s = 10;
  // The file system of the writer directories; null: the machine's. Tests inject faults below it
  // (wal/fault_file_system.h).
  wal::FileSystem* fs = nullptr;
};

struct SyncReport {
  int writers = 0;           // writer directories found
  int uploaded = 0;          // writers whose every record is now on the server
  int removed = 0;           // of those, finished writers whose directory was deleted
  int skipped_in_use = 0;    // held by a live process
  int64_t records = 0;       // records uploaded (or refused for good) in this sync
  int64_t points = 0;        // metric points uploaded
  std::vector<std::string> errors;  // one line per writer that could not be uploaded
};

// Uploads every writer WAL found under `paths`. The Result is an error only when nothing could
// be attempted (no such path, no writer under a path); per-writer failures are listed in
// SyncReport::errors (also an uploaded, finished writer whose directory could not be removed: the
// next sync removes it).
Result<SyncReport> RunSync(const std::vector<std::string>& paths, const SyncOptions& options);

// Writer directories (those holding meta.json) at or below `path`, at most three levels down.
std::vector<std::string> FindWriterDirs(const std::string& path,
                                        wal::FileSystem* fs = wal::FileSystem::Default());

}  // namespace cohort::agent
