#include "agent/file_digest.h"

#include <memory>
#include <optional>
#include <string>

#include "core/sha256.h"
#include "wal/background_appender.h"

namespace cohort::agent {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kQueuedCopyChunks = 4;  // read, not copied yet (4 MiB)

}  // namespace

Result<FileDigest> HashFile(wal::FileSystem* fs, const std::string& path,
                            const std::string& copy_to,
                            const std::function<void(int64_t)>& on_bytes,
                            const std::function<bool()>& stop) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<wal::SequentialFile> in, fs->NewSequentialFile(path));
  std::unique_ptr<wal::WritableFile> out;
  std::optional<wal::BackgroundAppender> copy;
  if (!copy_to.empty()) {
    COHORT_ASSIGN_OR_RETURN(out, fs->NewWritableFile(copy_to, wal::WriteMode::kTruncate));
    // The copy is written on a thread of its own while this one hashes: on two cores staging
    // takes about as long as the hash, not the hash and the copy one after the other.
    copy.emplace(out.get(), wal::BackgroundAppender::Options{.queued_chunks = kQueuedCopyChunks});
  }
  Sha256 h;
  FileDigest d;
  std::string buf(kChunkBytes, '\0');
  while (true) {
    if (stop && stop()) return Status::Unavailable("hashing " + path + ": stopped");
    COHORT_ASSIGN_OR_RETURN(std::string_view got, in->Read(buf.size(), buf.data()));
    if (got.empty()) break;
    if (copy) COHORT_RETURN_IF_ERROR(copy->Push(std::string(got)));
    h.Update(got);
    d.size += int64_t(got.size());
    if (on_bytes) on_bytes(int64_t(got.size()));
    if (got.size() < buf.size()) break;
  }
  if (copy) COHORT_RETURN_IF_ERROR(copy->Finish());
  // The copy is not synced: it lives until its version is committed (seconds to minutes), and
  // syncing it made the disk write every staged byte before the upload could start, for nothing
  // when the copy is deleted first. A crash of the machine (not of a process) before the commit
  // leaves a damaged copy, which the agent's size check or the server's SHA-256 check refuses:
  // the version fails, saying to log it again (docs/artifacts.md).
  if (out) COHORT_RETURN_IF_ERROR(out->Close());
  d.sha256 = h.FinishHex();
  return d;
}

}  // namespace cohort::agent
