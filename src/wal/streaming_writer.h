// The POSIX streaming writer behind FileSystem::NewStreamingWriter (file.h): O_DIRECT writes of
// aligned blocks, the rest through the page cache. Internal to wal/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::wal::internal {

// Opens (creates) `path` for writing in order from `offset`. Where the file system refuses
// O_DIRECT (tmpfs), or `offset` is not block-aligned, every byte goes through the page cache.
Result<std::unique_ptr<WritableFile>> OpenPosixStreamingWriter(const std::string& path,
                                                               uint64_t offset);

}  // namespace cohort::wal::internal
