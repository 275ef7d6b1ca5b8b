// ClientProcess: the training process behind a client connection of the agent, named so that
// it can be told apart from a later process that the system gave the same pid: its pid, its
// start time after boot (/proc/<pid>/stat field 22) and the boot's id
// (/proc/sys/kernel/random/boot_id). The agent keeps the writer of a client that went away
// without finishing while that process still runs, because it may come back and re-open its
// session (docs/formats.md, "Agent protocol").
//
// Value type; the functions read /proc and are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cohort/status.h"

namespace cohort::agent {

struct ClientProcess {
  int pid = 0;
  uint64_t start_ticks = 0;
  std::string boot_id;

  // Process `pid` as it is now; nullopt when there is none (or only its zombie).
  static std::optional<ClientProcess> Find(int pid, const std::string& proc_root = "/proc");
  // Whether this very process still runs (a zombie or a later process with its pid does not).
  bool Alive(const std::string& proc_root = "/proc") const;
  // Known to have ended: no such pid, a zombie, or another process under the pid (start time or
  // boot). False when /proc cannot say (unreadable): a process not seen is not taken for dead.
  bool Ended(const std::string& proc_root = "/proc") const;

  friend bool operator==(const ClientProcess&, const ClientProcess&) = default;

 private:
  // The process now under `pid`: nullopt when there is none (no such pid, or only its zombie);
  // an error when /proc cannot say (unreadable, unparsable).
  static Result<std::optional<ClientProcess>> Identify(int pid, const std::string& proc_root);
};

}  // namespace cohort::agent
