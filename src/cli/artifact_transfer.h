// The byte-moving side of `cohort artifact put|get` (docs/cli.md, docs/artifacts.md): SHA-256 of
// local files, blob uploads in parts of limits::kBlobPartBytes (status, the missing parts sent
// through the agent's part pool, several at a time, complete) and ranged, verified, resumable
// downloads. All file I/O goes through the injected wal::FileSystem; the HTTP side is a
// ReadClient (and the pool's own connections); digests are core/sha256.
//
// Threading: the functions are thread-compatible (one ReadClient and one PartPool per thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/part_pool.h"
#include "cli/read_client.h"
#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::cli {

// "[[entity/]project/]name[:version_or_alias]" with the project required (from `default_project`
// when the text has none); the entity defaults to the API key's. Without ":", "latest".
struct ArtifactRef {
  std::string entity, project, name, version = "latest";
  std::string CollectionPath() const;  // /api/v1/artifacts/<entity>/<project>/<name>
  std::string VersionPath() const;     // CollectionPath() + "/" + version
  std::string Text() const { return entity + "/" + project + "/" + name + ":" + version; }
};
Result<ArtifactRef> ParseArtifactRef(ReadClient& client, std::string_view text);

// "entity/project" or "project" (the API key's entity).
Result<std::pair<std::string, std::string>> ParseProject(ReadClient& client, std::string_view text);

// A file to upload: its path inside the version and on disk, its size and SHA-256.
struct LocalFile {
  std::string name, disk_path;
  uint64_t size = 0;
  std::string sha256;
};

// The files of `path`: the file itself (named by its base name) or, for a directory, every file
// under it (named by their paths relative to it, '/'-separated, sorted). Sizes are filled in,
// digests are not.
Result<std::vector<LocalFile>> CollectFiles(wal::FileSystem* fs, const std::string& path);

// Bytes moved so far, for progress; called after each part or range with the bytes it moved.
using ProgressFn = std::function<void(uint64_t bytes)>;

// The outcome of an upload.
struct UploadResult {
  bool already_stored = false;  // the entity held the blob: nothing was sent
  int parts_sent = 0;
  int parts_skipped = 0;  // stored by an earlier, interrupted upload
  uint64_t bytes_sent = 0;
};

// Makes the entity hold `file`'s blob: GET its status, PUT the missing parts through `parts`
// (several at once, each read from disk when its turn comes; the first alone when the upload is
// new), POST complete. A transient failure (no answer, 408/429/5xx, a part gone missing at
// completion) asks the status again and sends what is missing, up to 7 times over 32 s. The file
// must still have `file.size` bytes and `file.sha256`. `progress` is called from one thread at a
// time.
Result<UploadResult> UploadBlob(ReadClient& client, agent::PartPool* parts, std::string_view entity,
                                const LocalFile& file, const ProgressFn& progress = {});

// The SHA-256 of a file, failing when it is not the expected size; `stop` is asked as the hash
// goes (true: end it now, the answer is not wanted).
using HashFn = std::function<Result<std::string>(const std::function<bool()>& stop)>;

// UploadBlob of a file under an upload named by `upload_id` (32 lowercase hex digits;
// .../uploads/{id}, docs/api.md) rather than by its digest, so that its parts go while the file is
// hashed: `hash` runs on a thread of its own, and the completion brings the digest, which the
// server checks against the bytes it stored. Once the digest is known, an entity that holds the
// blob already ends the upload (the parts not started are not sent; those sent are left to
// `cohort gc`). With `file->sha256` set (a digest from the hash cache) the blob is looked up
// first and `hash` is not called. A server without uploads by id (404) gets the file by digest
// (UploadBlob) once it is hashed. Sets `file->sha256`; a failure of `hash` is the answer.
Result<UploadResult> UploadBlobById(ReadClient& client, agent::PartPool* parts,
                                    std::string_view entity, LocalFile* file,
                                    const std::string& upload_id, const HashFn& hash,
                                    const ProgressFn& progress = {});

// The upload id `cohort artifact put` gives a file: made of the entity, this host, the file's
// absolute path and its identity (device, inode, size, modification time: the hash cache's
// key), so that a put interrupted and run again continues the same upload, while a file changed
// since (a new identity) starts a new one.
std::string PutUploadId(std::string_view entity, const std::string& path, const wal::FileStat& st);

// Downloads `size` bytes from `url_path` into `dest` in ranged GETs of kBlobPartBytes, through
// `dest`.part (continued where an earlier download stopped), checks them against `sha256` and
// renames the part file into place. On a mismatch the part file is removed, `dest` is not made
// and the answer is kCorruption naming both digests.
Status DownloadVerified(ReadClient& client, wal::FileSystem* fs, const std::string& url_path,
                        const std::string& dest, std::string_view sha256, uint64_t size,
                        const ProgressFn& progress = {});

// The parent directory of a '/'-separated path ("" for none).
std::string ParentDir(std::string_view path);

}  // namespace cohort::cli
