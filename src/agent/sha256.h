// SHA-256 (OpenSSL EVP) for artifact files and manifests: incremental hashing of a stream and
// the hex digest of a file read through the wal::FileSystem seam, optionally copying its bytes to
// another file in the same single read pass (the client's staging copy). Not thread-safe per
// object; the free functions are.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::agent {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  // 64 lowercase hex digits; the object must not be used after.
  std::string HexDigest();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

std::string Sha256Hex(std::string_view data);

struct FileDigest {
  std::string sha256;
  int64_t size = 0;
};

// Reads `path` once, hashing it; with a non-empty `copy_to`, writes the bytes to that new file
// too (synced before returning). `on_bytes` (optional) is told of each chunk's size (progress).
Result<FileDigest> HashFile(wal::FileSystem* fs, const std::string& path,
                            const std::string& copy_to = {},
                            const std::function<void(int64_t)>& on_bytes = nullptr);

}  // namespace cohort::agent
