// The local blob store: files under a root directory (docs/artifacts.md, "local").
//
//   <root>/sha256/<first two hex digits>/<sha256>      published blobs
//   <root>/uploads/<sha256>-<size>/data                the upload's bytes, parts at their offsets
//   <root>/uploads/<sha256>-<size>/part-<n>            empty: part n is in `data`, synced
//   <root>/uploads/<sha256>-<size>/started             when the first part arrived (ms, text)
//
// A part is written at its offset as its bytes arrive and synced before its marker is created,
// so a marker always names durable bytes (a part sent again loses its marker first). The marker
// is not synced: one that a crash loses only makes the part be sent again (the upload's status
// no longer lists it, and a completion names it missing). No PUT writes into an upload while
// it is being completed (UploadHashes::BeginCompletion): its bytes are renamed into place.
// Publishing renames `data` into place (it was synced part by part) and syncs the blob's directory.
// Verifying finishes the SHA-256 computed while the parts arrived in order (upload_hash.h), reading
// only what it lacks: nothing when the parts came in order, all of `data` after a restart or when a
// part was sent again.
//
// Shared by several servers (LocalBlobStoreOptions::shared: a PostgreSQL store), no server knows
// what the others wrote into `data`, nor can it keep them from writing while it completes: a
// completion then reads all of `data`, hashing it as it writes a copy (`verified-<random>` in the
// upload's directory), and publishes that copy, whose bytes are the ones it hashed whatever
// another server writes into `data` meanwhile (a client that sends one upload's parts to two
// servers cannot get other bytes published under a blob's name).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "blob/blob_store.h"
#include "blob/upload_hash.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/limits.h"
#include "core/sha256.h"
#include "wal/file.h"

namespace cohort::blob {

int64_t PartCount(uint64_t size) {
  return int64_t((size + limits::kBlobPartBytes - 1) / limits::kBlobPartBytes);
}

uint64_t PartLength(uint64_t size, int64_t part) {
  if (part < 0 || part >= PartCount(size)) return 0;
  uint64_t start = uint64_t(part) * limits::kBlobPartBytes;
  return std::min<uint64_t>(limits::kBlobPartBytes, size - start);
}

Status CheckPart(uint64_t size, int64_t part, uint64_t length) {
  int64_t count = PartCount(size);
  if (part < 0 || part >= count) {
    return Status::InvalidArgument("part " + std::to_string(part) + ": a blob of " +
                                   std::to_string(size) + " bytes has parts 0 to " +
                                   std::to_string(count - 1));
  }
  if (length != PartLength(size, part)) {
    return Status::InvalidArgument("part " + std::to_string(part) + " of a blob of " +
                                   std::to_string(size) + " bytes is " +
                                   std::to_string(PartLength(size, part)) + " bytes, not " +
                                   std::to_string(length));
  }
  return Status::Ok();
}

std::string OwnedUploadName(std::string_view owner, std::string_view sha256) {
  std::string text = "cohort upload v1\n";
  text += owner;
  text += '\n';
  text += sha256;
  return Sha256::Hex(text);
}

namespace {

// Reads `source` to its end into `sink`, checking it hands out exactly `length` bytes.
Status DrainPart(int64_t part, uint64_t length, const PartSource& source,
                 const std::function<Status(std::string_view)>& sink) {
  uint64_t got = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::string_view bytes, source());
    if (bytes.empty()) break;
    if (bytes.size() > length - got) {
      return Status::InvalidArgument("part " + std::to_string(part) + ": more than its " +
                                     std::to_string(length) + " bytes were sent");
    }
    COHORT_RETURN_IF_ERROR(sink(bytes));
    got += bytes.size();
  }
  if (got != length) {
    return Status::InvalidArgument("part " + std::to_string(part) + ": the body ended after " +
                                   std::to_string(got) + " of its " + std::to_string(length) +
                                   " bytes");
  }
  return Status::Ok();
}

}  // namespace

Status BlobStore::PutPartFrom(std::string_view sha256, uint64_t size, int64_t part, uint64_t length,
                              const PartSource& source) {
  COHORT_RETURN_IF_ERROR(CheckPart(size, part, length));
  std::string bytes;
  bytes.reserve(size_t(length));
  COHORT_RETURN_IF_ERROR(DrainPart(part, length, source, [&](std::string_view b) {
    bytes.append(b);
    return Status::Ok();
  }));
  return PutPart(sha256, size, part, bytes);
}

Result<std::unique_ptr<VerifiedBlob>> BlobStore::VerifyAs(std::string_view upload_name,
                                                          uint64_t size, std::string_view sha256) {
  if (upload_name == sha256) return Verify(sha256, size);
  return Status::FailedPrecondition("the blob store " + Describe() +
                                    " cannot verify an upload stored under another name");
}

namespace {

using wal::FileSystem;
using wal::JoinPath;

Status CheckDigest(std::string_view sha256) {
  if (!IsSha256Hex(sha256)) {
    return Status::InvalidArgument("blob digest: expected 64 lowercase hex digits (SHA-256)");
  }
  return Status::Ok();
}

constexpr std::string_view kPartPrefix = "part-";

class LocalBlobStore;

class LocalVerifiedBlob final : public VerifiedBlob {
 public:
  // `file`: the verified bytes in the upload's directory (`data`, or a shared store's copy).
  LocalVerifiedBlob(LocalBlobStore* store, std::string sha256, std::string upload_dir,
                    std::string file)
      : store_(store),
        sha256_(std::move(sha256)),
        upload_dir_(std::move(upload_dir)),
        file_(std::move(file)) {}
  ~LocalVerifiedBlob() override;  // ends the upload's completion: PUTs may come again
  Status Publish() override;

 private:
  LocalBlobStore* store_;
  std::string sha256_;
  std::string upload_dir_;
  std::string file_;
  bool published_ = false;
};

class LocalBlobStore final : public BlobStore {
 public:
  LocalBlobStore(FileSystem* fs, std::string root, LocalBlobStoreOptions options)
      : fs_(fs), root_(std::move(root)), shared_(options.shared) {}

  // The root is private (0700, also when found open): what is under it is reachable by this
  // user only, whatever the modes of the files.
  Status Init() {
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(root_));
    COHORT_RETURN_IF_ERROR(fs_->SetPermissions(root_, 0700));
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(JoinPath(root_, "sha256")));
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(JoinPath(root_, "uploads")));
    return fs_->SyncDir(root_);  // their entries durable before any blob is published in them
  }

  std::string BlobDir(std::string_view sha256) const {
    return JoinPath(JoinPath(root_, "sha256"), sha256.substr(0, 2));
  }
  std::string BlobPath(std::string_view sha256) const {
    return JoinPath(BlobDir(sha256), sha256);
  }
  std::string UploadDir(std::string_view sha256, uint64_t size) const {
    return JoinPath(JoinPath(root_, "uploads"), std::string(sha256) + "-" + std::to_string(size));
  }

  Result<uint64_t> Stat(std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    Result<uint64_t> size = fs_->FileSize(BlobPath(sha256));
    if (!size.ok() && size.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("blob " + std::string(sha256) + " is not stored");
    }
    return size;
  }

  Result<std::vector<int64_t>> ListParts(std::string_view sha256, uint64_t size) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    std::vector<int64_t> parts;
    Result<std::vector<std::string>> names = fs_->ListDir(UploadDir(sha256, size));
    if (!names.ok()) {
      if (names.status().code() == StatusCode::kNotFound) return parts;
      return names.status();
    }
    if (std::find(names->begin(), names->end(), "data") == names->end()) {
      // No data: an upload whose first part is being written (its directory and start time
      // come first: left alone), or markers a server killed while publishing the upload left
      // behind (its data renamed into place, the directory not yet removed; a part writes its
      // data before its marker, so only a publication leaves a marker without data). Parts that
      // are not there are never listed (the client would skip them and its completion fail);
      // such leftovers go.
      const bool leftover = std::any_of(names->begin(), names->end(), [](const std::string& n) {
        return n.starts_with(kPartPrefix);
      });
      if (leftover) (void)fs_->RemoveAll(UploadDir(sha256, size));
      return parts;
    }
    const int64_t count = PartCount(size);
    for (const std::string& name : *names) {
      if (!name.starts_with(kPartPrefix)) continue;
      int64_t n = -1;
      const char* begin = name.data() + kPartPrefix.size();
      auto [p, ec] = std::from_chars(begin, name.data() + name.size(), n);
      if (ec == std::errc() && p == name.data() + name.size() && n >= 0 && n < count) {
        parts.push_back(n);
      }
    }
    std::sort(parts.begin(), parts.end());
    return parts;
  }

  Status PutPart(std::string_view sha256, uint64_t size, int64_t part,
                 std::string_view bytes) override {
    bool handed = false;
    return PutPartFrom(sha256, size, part, bytes.size(), [&]() -> Result<std::string_view> {
      if (handed) return std::string_view();
      handed = true;
      return bytes;
    });
  }

  bool WritesPartsAsTheyCome() const override { return true; }
  Status PutPartFrom(std::string_view sha256, uint64_t size, int64_t part, uint64_t length,
                     const PartSource& source) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_RETURN_IF_ERROR(CheckPart(size, part, length));
    const std::string dir = UploadDir(sha256, size);
    Sha256* hash = nullptr;
    COHORT_RETURN_IF_ERROR(hashes_.BeginPart(dir, part, &hash));
    Status written = WritePart(dir, part, length, source, hash);
    hashes_.EndPart(
        dir, part, written.ok(), hash != nullptr, PartCount(size),
        [&](int64_t n) {
          Result<bool> e = fs_->Exists(JoinPath(dir, std::string(kPartPrefix) +
                                                         std::to_string(n)));
          return e.ok() && *e;
        },
        [&](int64_t n, Sha256* h) -> Status {
          const uint64_t start = uint64_t(n) * limits::kBlobPartBytes;
          Result<uint64_t> end = HashFrom(JoinPath(dir, "data"), start, h, PartLength(size, n));
          if (!end.ok() || *end != start + PartLength(size, n)) {
            return Status::Internal("part " + std::to_string(n) + " not read back");
          }
          return Status::Ok();
        });
    if (written.code() == StatusCode::kNotFound) {
      // A file of the upload vanished under the part (the sweep dropped an upload it found
      // abandoned): the part is worth sending again, which starts the upload anew. Not a 404,
      // which a client takes for an upload that cannot succeed.
      return Status::Unavailable("part " + std::to_string(part) +
                                 ": the upload was removed while the part was written; send it "
                                 "again");
    }
    return written;
  }

  // Writes part `part` at its offset of `dir`/data as `source` hands its bytes out (feeding
  // them into `hash` when there is one), syncs it, then marks it.
  Status WritePart(const std::string& dir, int64_t part, uint64_t length, const PartSource& source,
                   Sha256* hash) {
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(dir));
    const std::string started = JoinPath(dir, "started");
    COHORT_ASSIGN_OR_RETURN(bool has_started, fs_->Exists(started));
    if (!has_started) {
      // Created exclusively: of parts arriving at once, one writes the time, the others find
      // it made. (Until the time is written, or after a crash before it was, the sweep goes by
      // the file's own modification time: DropUploadsIdleSince.)
      Result<std::unique_ptr<wal::WritableFile>> file =
          fs_->NewWritableFile(started, wal::WriteMode::kCreateExclusive);
      if (file.ok()) {
        COHORT_RETURN_IF_ERROR((*file)->Append(std::to_string(NowMillis())));
        COHORT_RETURN_IF_ERROR((*file)->Sync());
        COHORT_RETURN_IF_ERROR((*file)->Close());
      } else if (file.status().code() != StatusCode::kAlreadyExists) {
        return file.status();
      }
    }
    {
      // A part sent again loses its mark before its bytes are touched: a body cut midway must
      // not leave a mark over bytes half replaced.
      Status unmarked = fs_->Remove(JoinPath(dir, std::string(kPartPrefix) + std::to_string(part)));
      if (unmarked.ok()) {
        COHORT_RETURN_IF_ERROR(fs_->SyncDir(dir));  // a crash must not bring the mark back
      } else if (unmarked.code() != StatusCode::kNotFound) {
        return unmarked;
      }
      // Through the page cache: written past it (wal::FileSystem::NewStreamingWriter, as
      // downloads are), a 2 GiB put was no faster (docs/benchmarks.md), and the blob's first
      // readers would find nothing cached.
      COHORT_ASSIGN_OR_RETURN(auto data, fs_->NewWritableFile(JoinPath(dir, "data"),
                                                              wal::WriteMode::kAppend));
      uint64_t at = uint64_t(part) * limits::kBlobPartBytes;
      COHORT_RETURN_IF_ERROR(DrainPart(part, length, source, [&](std::string_view bytes) {
        COHORT_RETURN_IF_ERROR(data->WriteAt(at, bytes));
        at += bytes.size();
        if (hash != nullptr) hash->Update(bytes);
        return Status::Ok();
      }));
      COHORT_RETURN_IF_ERROR(data->Sync());
      COHORT_RETURN_IF_ERROR(data->Close());
    }
    // Not synced (see the top of this file).
    COHORT_ASSIGN_OR_RETURN(
        auto marker,
        fs_->NewWritableFile(JoinPath(dir, std::string(kPartPrefix) + std::to_string(part)),
                             wal::WriteMode::kTruncate));
    return marker->Close();
  }

  Result<std::unique_ptr<VerifiedBlob>> Verify(std::string_view sha256, uint64_t size) override {
    return VerifyAs(sha256, size, sha256);
  }

  Result<std::unique_ptr<VerifiedBlob>> VerifyAs(std::string_view upload_name, uint64_t size,
                                                 std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_RETURN_IF_ERROR(CheckDigest(upload_name));
    const std::string dir = UploadDir(upload_name, size);
    // No PUT writes into the bytes from here until they are published or given up (a writer's
    // open file would follow `data` into the published blob).
    COHORT_RETURN_IF_ERROR(hashes_.BeginCompletion(dir));
    Result<std::unique_ptr<VerifiedBlob>> verified =
        VerifyCompleting(dir, upload_name, size, sha256);
    if (!verified.ok()) hashes_.EndCompletion(dir);
    return verified;
  }

  // VerifyAs once the completion began (the result ends it when published or dropped).
  Result<std::unique_ptr<VerifiedBlob>> VerifyCompleting(const std::string& dir,
                                                         std::string_view upload_name,
                                                         uint64_t size, std::string_view sha256) {
    COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> parts, ListParts(upload_name, size));
    const int64_t count = PartCount(size);
    for (int64_t n = 0; n < count; ++n) {
      if (n >= int64_t(parts.size()) || parts[size_t(n)] != n) {
        return Status::FailedPrecondition("blob " + std::string(sha256) + ": part " +
                                          std::to_string(n) + " of " + std::to_string(count) +
                                          " is missing; upload it, then complete again");
      }
    }
    const std::string data = JoinPath(dir, "data");
    if (count == 0) {
      // The empty blob has no part: its file is made here.
      COHORT_RETURN_IF_ERROR(fs_->CreateDir(dir));
      COHORT_ASSIGN_OR_RETURN(auto empty, fs_->NewWritableFile(data, wal::WriteMode::kTruncate));
      COHORT_RETURN_IF_ERROR(empty->Sync());
      COHORT_RETURN_IF_ERROR(empty->Close());
    }
    std::optional<UploadHashes::Prefix> prefix = hashes_.Take(dir);
    if (shared_) return VerifyByCopy(dir, data, size, sha256);
    // The hash of the parts that came in order, then the rest read back; a mismatch after a
    // shortcut is checked again on the whole file before anything is refused.
    Sha256 fresh;
    Sha256* hash = prefix ? prefix->hash.get() : &fresh;
    const uint64_t start =
        prefix ? std::min(size, uint64_t(prefix->parts) * limits::kBlobPartBytes) : 0;
    COHORT_ASSIGN_OR_RETURN(uint64_t read, HashFrom(data, start, hash));
    std::string actual = hash->FinishHex();
    if ((read != size || actual != sha256) && start > 0) {
      COHORT_ASSIGN_OR_RETURN(read, HashFrom(data, 0, &fresh));
      actual = fresh.FinishHex();
    }
    if (read != size || actual != sha256) return Refuse(dir, read, actual, size, sha256);
    return std::unique_ptr<VerifiedBlob>(
        new LocalVerifiedBlob(this, std::string(sha256), dir, data));
  }

  // Bytes that are not the blob announced: the upload goes (its parts must be sent again).
  Status Refuse(const std::string& dir, uint64_t read, const std::string& actual, uint64_t size,
                std::string_view sha256) {
    (void)fs_->RemoveAll(dir);
    return Status::InvalidArgument("the uploaded bytes (" + std::to_string(read) +
                                   " bytes, SHA-256 " + actual + ") are not the blob announced (" +
                                   std::to_string(size) + " bytes, SHA-256 " + std::string(sha256) +
                                   "); upload the file again");
  }

  // A shared store's verification (the top of this file): `data` hashed as it is copied, the
  // copy synced; refused, the upload goes as in VerifyCompleting.
  Result<std::unique_ptr<VerifiedBlob>> VerifyByCopy(const std::string& dir,
                                                     const std::string& data, uint64_t size,
                                                     std::string_view sha256) {
    const std::string copy = JoinPath(dir, "verified-" + ids::RandomHex(8));
    Sha256 hash;
    uint64_t read = 0;
    Status copied = [&]() -> Status {
      COHORT_ASSIGN_OR_RETURN(auto in, fs_->NewSequentialFile(data));
      COHORT_ASSIGN_OR_RETURN(auto out,
                              fs_->NewWritableFile(copy, wal::WriteMode::kCreateExclusive));
      std::string scratch(1 << 20, '\0');
      while (true) {
        COHORT_ASSIGN_OR_RETURN(std::string_view got, in->Read(scratch.size(), scratch.data()));
        if (got.empty()) break;
        hash.Update(got);
        read += got.size();
        if (read > size) break;  // more than announced: refused below, not copied on
        COHORT_RETURN_IF_ERROR(out->Append(got));
      }
      COHORT_RETURN_IF_ERROR(out->Sync());
      return out->Close();
    }();
    if (!copied.ok()) {
      (void)fs_->Remove(copy);
      return copied;
    }
    const std::string actual = hash.FinishHex();
    if (read != size || actual != sha256) return Refuse(dir, read, actual, size, sha256);
    return std::unique_ptr<VerifiedBlob>(
        new LocalVerifiedBlob(this, std::string(sha256), dir, copy));
  }

  // Feeds `path` from `offset` to its end (at most `length` bytes) into `hash`; the offset plus
  // the bytes read.
  Result<uint64_t> HashFrom(const std::string& path, uint64_t offset, Sha256* hash,
                            uint64_t length = UINT64_MAX) {
    COHORT_ASSIGN_OR_RETURN(auto in, fs_->NewSequentialFile(path));
    COHORT_RETURN_IF_ERROR(in->Skip(offset));
    std::string scratch(1 << 20, '\0');
    uint64_t read = offset;
    while (read - offset < length) {
      const size_t want = size_t(std::min<uint64_t>(scratch.size(), length - (read - offset)));
      COHORT_ASSIGN_OR_RETURN(std::string_view got, in->Read(want, scratch.data()));
      if (got.empty()) break;
      hash->Update(got);
      read += got.size();
    }
    return read;
  }

  void EndCompletion(const std::string& upload_dir) { hashes_.EndCompletion(upload_dir); }
  void RemoveCopy(const std::string& copy) { (void)fs_->Remove(copy); }

  Status PublishUpload(const std::string& sha256, const std::string& upload_dir,
                       const std::string& file) {
    hashes_.Forget(upload_dir);
    const std::string dir = BlobDir(sha256);
    COHORT_ASSIGN_OR_RETURN(const bool dir_there, fs_->Exists(dir));
    if (!dir_there) {
      // The directory's own entry durable before the blob's is (a power loss would otherwise
      // take a blob answered as stored with the directory it is the first of).
      COHORT_RETURN_IF_ERROR(fs_->CreateDir(dir));
      COHORT_RETURN_IF_ERROR(fs_->SyncDir(JoinPath(root_, "sha256")));
    }
    Status moved = fs_->Rename(file, BlobPath(sha256));
    if (!moved.ok()) {
      // Published meanwhile by a verification of the same upload.
      if (moved.code() == StatusCode::kNotFound && Stat(sha256).ok()) return Status::Ok();
      return moved;
    }
    COHORT_RETURN_IF_ERROR(fs_->SyncDir(dir));
    return fs_->RemoveAll(upload_dir);
  }

  Result<std::string> Read(std::string_view sha256, uint64_t offset, uint64_t length) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    Result<std::unique_ptr<wal::SequentialFile>> in = fs_->NewSequentialFile(BlobPath(sha256));
    if (!in.ok()) {
      if (in.status().code() == StatusCode::kNotFound) {
        return Status::NotFound("blob " + std::string(sha256) + " is not stored");
      }
      return in.status();
    }
    COHORT_RETURN_IF_ERROR((*in)->Skip(offset));
    std::string out(length, '\0');
    COHORT_ASSIGN_OR_RETURN(std::string_view got, (*in)->Read(length, out.data()));
    out.resize(got.size());
    return out;
  }

  Status Delete(std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    Status s = fs_->Remove(BlobPath(sha256));
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    return fs_->SyncDir(BlobDir(sha256));
  }

  Result<bool> DeleteUnless(std::string_view sha256,
                            const std::function<Result<bool>()>& keep) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    const std::string trash_dir = JoinPath(root_, "trash");
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(trash_dir));
    const std::string trash = JoinPath(trash_dir, std::string(sha256) + "." +
                                                      std::to_string(NowMillis()));
    Status moved = fs_->Rename(BlobPath(sha256), trash);
    if (!moved.ok()) {
      if (moved.code() == StatusCode::kNotFound) return false;
      return moved;
    }
    Result<bool> kept = keep();
    if (!kept.ok() || *kept) {
      // Back in place, unless a publication put the same bytes there meanwhile.
      if (!Stat(sha256).ok()) {
        COHORT_RETURN_IF_ERROR(fs_->Rename(trash, BlobPath(sha256)));
        COHORT_RETURN_IF_ERROR(fs_->SyncDir(BlobDir(sha256)));
      } else {
        COHORT_RETURN_IF_ERROR(fs_->Remove(trash));
      }
      if (!kept.ok()) return kept.status();
      return false;
    }
    COHORT_RETURN_IF_ERROR(fs_->Remove(trash));
    COHORT_RETURN_IF_ERROR(fs_->SyncDir(BlobDir(sha256)));
    return true;
  }

  Status ListBlobs(const std::function<Status(std::string_view, uint64_t)>& fn) override {
    const std::string top = JoinPath(root_, "sha256");
    COHORT_ASSIGN_OR_RETURN(std::vector<std::string> fans, fs_->ListDir(top));
    for (const std::string& fan : fans) {
      COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(JoinPath(top, fan)));
      for (const std::string& name : names) {
        if (!IsSha256Hex(name)) continue;
        Result<uint64_t> size = fs_->FileSize(JoinPath(JoinPath(top, fan), name));
        if (!size.ok()) {
          if (size.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
          return size.status();
        }
        COHORT_RETURN_IF_ERROR(fn(name, *size));
      }
    }
    return Status::Ok();
  }

  Result<int64_t> DropUploadsIdleSince(int64_t idle_since_ms) override {
    const std::string top = JoinPath(root_, "uploads");
    COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(top));
    int64_t dropped = 0;
    for (const std::string& name : names) {
      const std::string dir = JoinPath(top, name);
      // An entry whose start cannot be read (a stray file, a damaged `started`) goes by its own
      // time: one such entry must not stop the sweep of every other upload.
      Result<int64_t> started = StartedMs(dir);
      if (!started.ok()) {
        Result<wal::FileStat> st = fs_->Stat(dir);
        if (!st.ok()) continue;
        started = st->mtime_ns / 1'000'000;
      }
      if (*started >= idle_since_ms) continue;
      // Every part is written into `data`: its time is the upload's last activity (a long
      // upload, or one resumed after an outage, is still going).
      if (Result<wal::FileStat> data = fs_->Stat(JoinPath(dir, "data"));
          data.ok() && data->mtime_ns / 1'000'000 >= idle_since_ms) {
        continue;
      }
      hashes_.Forget(dir);
      COHORT_RETURN_IF_ERROR(fs_->RemoveAll(dir));
      ++dropped;
    }
    return dropped;
  }

  std::string Describe() const override { return "local " + root_; }

 private:
  // When the upload `dir` began: the time its `started` file holds; while that file is still
  // empty (its first part is being written, or a crash came before the time was), the file's
  // modification time; without the file (made by the same part, next), the directory's. A
  // started file read as 0 made every upload being begun look abandoned to the sweep.
  Result<int64_t> StartedMs(const std::string& dir) {
    const std::string started = JoinPath(dir, "started");
    Result<std::string> text = wal::ReadFileToString(fs_, started, 64);
    if (text.ok()) {
      int64_t ms = 0;
      const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), ms);
      if (error == std::errc() && end == text->data() + text->size() && ms > 0) return ms;
    } else if (text.status().code() != StatusCode::kNotFound) {
      return text.status();
    }
    Result<wal::FileStat> st = fs_->Stat(started);
    if (!st.ok() && st.status().code() == StatusCode::kNotFound) st = fs_->Stat(dir);
    if (!st.ok()) {
      // Gone meanwhile (completed, or dropped by another sweep): nothing to drop.
      if (st.status().code() == StatusCode::kNotFound) return INT64_MAX;
      return st.status();
    }
    return st->mtime_ns / 1'000'000;
  }

  FileSystem* fs_;
  const std::string root_;
  const bool shared_;  // LocalBlobStoreOptions::shared
  UploadHashes hashes_;
};

LocalVerifiedBlob::~LocalVerifiedBlob() {
  // A shared store's verified copy not published (the record or the publication failed) goes:
  // each completion tried again makes its own.
  if (!published_ && !file_.ends_with("/data")) store_->RemoveCopy(file_);
  store_->EndCompletion(upload_dir_);
}

Status LocalVerifiedBlob::Publish() {
  Status st = store_->PublishUpload(sha256_, upload_dir_, file_);
  published_ = st.ok();
  return st;
}

}  // namespace

Result<std::unique_ptr<BlobStore>> OpenLocalBlobStore(wal::FileSystem* fs, std::string root,
                                                      LocalBlobStoreOptions options) {
  auto store = std::make_unique<LocalBlobStore>(fs, std::move(root), options);
  COHORT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<BlobStore>(std::move(store));
}

}  // namespace cohort::blob
