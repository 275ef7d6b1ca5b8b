// The hash cache (docs/formats.md, "Hash cache"): the SHA-256 of local files by their identity
// (device, inode, size, modification time in ns), in the user's cache directory, shared by the
// Python SDK, the C++ client and `cohort artifact put|get`, so that a checkpoint logged or put
// again unchanged is not read again (2 GiB of SHA-256 is seconds of a core).
//
// An entry is a small file <cache>/hashes/v1/<device>-<inode>-<size>-<mtime_ns> holding the
// digest and a checksum of the entry; written under a unique name and renamed into place, so
// that readers see a whole entry or none. A digest is recorded only when the file did not change
// while it was hashed and its modification time is older than the hashing by kRacyNanos (a write
// within the file system's timestamp tick after the stat would not move the time): the cache
// never answers for contents it did not read. The cache is a shortcut: every failure to read or
// write it is a miss, never an error.
//
// Thread-safe (no shared state); safe across processes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/file_digest.h"
#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::agent {

// How much older than the start of its hashing a file's modification time must be for its digest
// to be recorded.
// (python/cohort/artifacts.py _RACY_NS is the same; tests/python/test_artifacts.py checks it.)
inline constexpr int64_t kRacyNanos = 1'000'000'000;

// The directory of the entries under a cache directory (<cache>/hashes/v1).
std::string HashCacheDir(const std::string& cache_dir);
// An entry's file name: "<device>-<inode>-<size>-<mtime_ns>" (decimal).
std::string HashCacheKey(const wal::FileStat& st);
// An entry's contents: the digest, a space, the first 16 hex digits of
// SHA-256("<key> <digest>"), a newline.
std::string HashCacheEntry(const wal::FileStat& st, std::string_view sha256);

// The digest recorded for a file of identity `st`; nullopt when there is none (or it is damaged).
std::optional<std::string> LookupHash(wal::FileSystem* fs, const std::string& cache_dir,
                                      const wal::FileStat& st);
// Removes the entry of the file of identity `st`, if any (best effort): its digest turned out
// wrong (the server found other bytes).
void ForgetHash(wal::FileSystem* fs, const std::string& cache_dir, const wal::FileStat& st);
// Records `sha256` as the digest of the file of identity `st` (best effort).
void RecordHash(wal::FileSystem* fs, const std::string& cache_dir, const wal::FileStat& st,
                std::string_view sha256);

// HashFile through the cache under `cache_dir` ("": no cache). Without `copy_to`, a recorded
// digest is answered without reading the file (`*from_cache` set when given); with it, the file
// is read and copied. Either way a digest computed here is recorded under the rule above.
// `stop`: as HashFile's.
Result<FileDigest> HashFileCached(wal::FileSystem* fs, const std::string& path,
                                  const std::string& cache_dir, const std::string& copy_to = {},
                                  const std::function<void(int64_t)>& on_bytes = nullptr,
                                  bool* from_cache = nullptr,
                                  const std::function<bool()>& stop = nullptr);

}  // namespace cohort::agent
