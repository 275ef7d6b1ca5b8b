// Staging directories and who owns them (docs/formats.md, "Staging"). A client that copies files
// for the agent into <staging root>/<id>/ claims that directory first:
//   1. once per process, it makes <staging root>/.clients/<pid_ns>.<pid>.<start_ticks>, holding
//      "<pid_ns>\n", and takes an exclusive lock on it, held for the life of the process;
//   2. it hard-links that file as <id>/.lock (so every directory of the process shares one lock,
//      and one descriptor);
//   3. it writes <id>/.owner naming its process ("<pid> <start_ticks> <boot_id>\n").
// The agent removes .owner (then .lock) once the intent is durable in its WAL; the directory is
// the uploader's from then on. A directory that still has .owner when its client has ended was
// never handed over: the agent deletes it. The client has ended when the lock of .lock is free (the
// kernel frees it once no process holds the descriptor; whatever PID namespace each side is in;
// a forked child closes its copy and takes a file of its own) and, for a client in the agent's
// own PID namespace, when its pid no longer names that process (start time and boot told apart).
// A directory without .lock (a client older than the lock: the agent's look makes an empty one)
// is judged by its pid alone.
//
// Thread-safe: ClaimStaging serialises its process-wide state; the rest are pure or read /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::agent {

inline constexpr char kStagingOwnerFile[] = ".owner";
inline constexpr char kStagingLockFile[] = ".lock";
inline constexpr char kStagingClientsDir[] = ".clients";

struct StagingOwner {
  int64_t pid = 0;           // in the owner's PID namespace
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22
  std::string boot_id;       // /proc/sys/kernel/random/boot_id
  friend bool operator==(const StagingOwner&, const StagingOwner&) = default;
};
// "<pid> <start_ticks> <boot_id>\n"
std::string StagingOwnerText(const StagingOwner& owner);
std::optional<StagingOwner> ParseStagingOwner(std::string_view text);
// This process, read from /proc through `fs`; nullopt when /proc cannot be read.
std::optional<StagingOwner> ThisProcessAsOwner(wal::FileSystem* fs);

// The inode of /proc/self/ns/pid through `fs`: this process's PID namespace; 0 when unknown.
uint64_t ThisPidNamespace(wal::FileSystem* fs);
// The PID namespace a claim's lock file names ("<pid_ns>\n"); 0 when it names none (empty: a
// lock file the agent made itself for a directory of an older client).
uint64_t ParseStagingLockNamespace(std::string_view text);

// Claims the staging directory `dir` (made by the caller, a child of the staging root) for this
// process as above. Nothing is written (and the agent never deletes the directory) when /proc
// cannot be read or the process's lock cannot be taken; an error when the directory's files
// cannot be made.
Status ClaimStaging(wal::FileSystem* fs, const std::string& dir);

}  // namespace cohort::agent
