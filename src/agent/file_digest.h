// The SHA-256 and size of a file read through the wal::FileSystem seam, optionally copying its
// bytes to another file in the same single read pass (the client's staging copy of an artifact
// file). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::agent {

struct FileDigest {
  std::string sha256;
  int64_t size = 0;
};

// Reads `path` once, hashing it; with a non-empty `copy_to`, writes the bytes to that new file
// too (not synced: see HashFile). `on_bytes` (optional) is told of each chunk's size (progress);
// `stop` (optional) is asked before each chunk: true ends the hash (kUnavailable, "stopped").
Result<FileDigest> HashFile(wal::FileSystem* fs, const std::string& path,
                            const std::string& copy_to = {},
                            const std::function<void(int64_t)>& on_bytes = nullptr,
                            const std::function<bool()>& stop = nullptr);

}  // namespace cohort::agent
