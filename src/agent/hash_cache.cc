#include "agent/hash_cache.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "core/sha256.h"

namespace cohort::agent {
namespace {

constexpr size_t kEntryBytes = 64 + 1 + 16 + 1;

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int64_t WallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string HashCacheDir(const std::string& cache_dir) { return cache_dir + "/hashes/v1"; }

std::string HashCacheKey(const wal::FileStat& st) {
  return std::to_string(st.device) + "-" + std::to_string(st.inode) + "-" +
         std::to_string(st.size) + "-" + std::to_string(st.mtime_ns);
}

std::string HashCacheEntry(const wal::FileStat& st, std::string_view sha256) {
  std::string check = Sha256::Hex(HashCacheKey(st) + " " + std::string(sha256)).substr(0, 16);
  return std::string(sha256) + " " + check + "\n";
}

std::optional<std::string> LookupHash(wal::FileSystem* fs, const std::string& cache_dir,
                                      const wal::FileStat& st) {
  if (cache_dir.empty()) return std::nullopt;
  auto text = wal::ReadFileToString(fs, wal::JoinPath(HashCacheDir(cache_dir), HashCacheKey(st)),
                                    kEntryBytes);
  if (!text.ok() || text->size() != kEntryBytes) return std::nullopt;
  std::string sha = text->substr(0, 64);
  if (!IsLowerHex(sha) || *text != HashCacheEntry(st, sha)) return std::nullopt;
  return sha;
}

void ForgetHash(wal::FileSystem* fs, const std::string& cache_dir, const wal::FileStat& st) {
  if (cache_dir.empty()) return;
  (void)fs->Remove(wal::JoinPath(HashCacheDir(cache_dir), HashCacheKey(st)));
}

void RecordHash(wal::FileSystem* fs, const std::string& cache_dir, const wal::FileStat& st,
                std::string_view sha256) {
  if (cache_dir.empty() || sha256.size() != 64 || !IsLowerHex(sha256)) return;
  static std::atomic<uint64_t> counter{0};
  const std::string dir = HashCacheDir(cache_dir);
  const std::string key = HashCacheKey(st);
  // Unique to this writer: two processes recording one file never write one temporary file.
  const std::string tmp = wal::JoinPath(dir, "." + key + "." + std::to_string(::getpid()) + "." +
                                                 std::to_string(counter.fetch_add(1)));
  if (!fs->CreateDir(dir).ok()) return;
  auto file = fs->NewWritableFile(tmp, wal::WriteMode::kCreateExclusive);
  if (!file.ok()) return;
  Status s = (*file)->Append(HashCacheEntry(st, sha256));
  Status closed = (*file)->Close();
  if (s.ok() && closed.ok() && fs->Rename(tmp, wal::JoinPath(dir, key)).ok()) return;
  (void)fs->Remove(tmp);
}

Result<FileDigest> HashFileCached(wal::FileSystem* fs, const std::string& path,
                                  const std::string& cache_dir, const std::string& copy_to,
                                  const std::function<void(int64_t)>& on_bytes, bool* from_cache,
                                  const std::function<bool()>& stop) {
  if (from_cache) *from_cache = false;
  if (cache_dir.empty()) return HashFile(fs, path, copy_to, on_bytes, stop);
  const int64_t started = WallNanos();
  Result<wal::FileStat> before = fs->Stat(path);
  if (before.ok() && copy_to.empty()) {
    if (std::optional<std::string> sha = LookupHash(fs, cache_dir, *before)) {
      if (from_cache) *from_cache = true;
      if (on_bytes) on_bytes(int64_t(before->size));
      return FileDigest{*sha, int64_t(before->size)};
    }
  }
  COHORT_ASSIGN_OR_RETURN(FileDigest d, HashFile(fs, path, copy_to, on_bytes, stop));
  Result<wal::FileStat> after = fs->Stat(path);
  if (before.ok() && after.ok() && *before == *after && uint64_t(d.size) == after->size &&
      after->mtime_ns <= started - kRacyNanos) {
    RecordHash(fs, cache_dir, *after, d.sha256);
  }
  return d;
}

}  // namespace cohort::agent
