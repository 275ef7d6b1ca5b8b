// The S3 blob store (s3_blob_store.h; docs/artifacts.md, "S3"):
//
//   <prefix>sha256/<first two hex digits>/<sha256>    published blobs
//   <prefix>uploads/<sha256>-<size>/part-<n>          the parts of an unfinished upload
//   <prefix>trash/<sha256>.<ms>                       a blob DeleteUnless is asking about
//
// A part is one PUT (durable once answered) of the request's body as received (not copied).
// Verify reads the parts back in order through SHA-256 as their bytes arrive (no part is held in
// memory) and remembers their ETags; Publish makes the blob by a multipart upload of server-side
// copies of those parts (no byte passes through Cohort), each copied only while it still has the
// ETag that was verified, then deletes the parts. An upload
// started is the oldest LastModified of its parts.
#include "blob/s3_blob_store.h"

#include <charconv>
#include <functional>
#include <map>

#include "blob/s3_client.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/sha256.h"

namespace cohort::blob {

Status CheckS3Config(const S3Config& c) {
  if (!c.endpoint.starts_with("http://") && !c.endpoint.starts_with("https://")) {
    return Status::InvalidArgument("--blob-s3-endpoint: expected http(s)://host[:port], got \"" +
                                   c.endpoint + "\"");
  }
  std::string_view rest = std::string_view(c.endpoint).substr(c.endpoint.find("://") + 3);
  if (rest.empty() || rest.front() == '/' ||
      rest.find_first_not_of('/', rest.find('/')) != std::string_view::npos) {
    return Status::InvalidArgument(
        "--blob-s3-endpoint: expected http(s)://host[:port] without a "
        "path (the bucket is --blob-s3-bucket), got \"" +
        c.endpoint + "\"");
  }
  if (c.bucket.empty() || c.bucket.find('/') != std::string::npos) {
    return Status::InvalidArgument("--blob-s3-bucket: a bucket name is needed (no '/')");
  }
  if (c.region.empty()) return Status::InvalidArgument("--blob-s3-region: empty");
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Status::InvalidArgument(
        "S3 credentials missing: set COHORT_S3_ACCESS_KEY and COHORT_S3_SECRET_KEY (or "
        "--blob-s3-access-key / --blob-s3-secret-key)");
  }
  if (c.prefix.starts_with("/")) {
    return Status::InvalidArgument("--blob-s3-prefix: must not start with '/'");
  }
  return Status::Ok();
}

namespace {

Status CheckDigest(std::string_view sha256) {
  if (!IsSha256Hex(sha256)) {
    return Status::InvalidArgument("blob digest: expected 64 lowercase hex digits (SHA-256)");
  }
  return Status::Ok();
}

constexpr std::string_view kPartPrefix = "part-";
constexpr int kDeleteWorkers = 4;  // deletions in flight at once
// A multipart upload has at most 10000 parts: the most a blob published by copying its parts
// can have.
constexpr int64_t kMaxParts = 10000;

Status CheckPublishable(uint64_t size) {
  if (PartCount(size) > kMaxParts) {
    return Status::PayloadTooLarge(
        "a blob of " + std::to_string(size) + " bytes: the S3 blob store holds blobs of at most " +
        std::to_string(kMaxParts) + " parts (" +
        std::to_string(uint64_t(kMaxParts) * limits::kBlobPartBytes) + " bytes)");
  }
  return Status::Ok();
}

class S3BlobStore;

class S3VerifiedBlob final : public VerifiedBlob {
 public:
  S3VerifiedBlob(S3BlobStore* store, std::string upload_name, std::string sha256, uint64_t size,
                 std::vector<std::string> etags)
      : store_(store),
        upload_name_(std::move(upload_name)),
        sha256_(std::move(sha256)),
        size_(size),
        etags_(std::move(etags)) {}
  Status Publish() override;

 private:
  S3BlobStore* store_;
  std::string upload_name_;  // the upload's parts are named by it (VerifyAs)
  std::string sha256_;
  uint64_t size_;
  std::vector<std::string> etags_;  // of the parts as verified
};

class S3BlobStore final : public BlobStore {
 public:
  explicit S3BlobStore(S3Config config) : s3_(std::move(config)) { prefix_ = s3_.config().prefix; }

  Status Init() { return s3_.CheckOrCreateBucket(); }

  std::string BlobKey(std::string_view sha256) const {
    return prefix_ + "sha256/" + std::string(sha256.substr(0, 2)) + "/" + std::string(sha256);
  }
  std::string UploadPrefix(std::string_view sha256, uint64_t size) const {
    return prefix_ + "uploads/" + std::string(sha256) + "-" + std::to_string(size) + "/";
  }
  std::string PartKey(std::string_view sha256, uint64_t size, int64_t part) const {
    return UploadPrefix(sha256, size) + std::string(kPartPrefix) + std::to_string(part);
  }

  Result<uint64_t> Stat(std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    Result<uint64_t> size = s3_.HeadObject(BlobKey(sha256));
    if (!size.ok() && size.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("blob " + std::string(sha256) + " is not stored");
    }
    return size;
  }

  // The parts of an upload: number -> the object.
  Result<std::map<int64_t, S3Object>> Parts(std::string_view sha256, uint64_t size) {
    std::map<int64_t, S3Object> parts;
    const std::string prefix = UploadPrefix(sha256, size);
    const int64_t count = PartCount(size);
    COHORT_RETURN_IF_ERROR(s3_.ListObjects(prefix, [&](const S3Object& o) {
      std::string_view name = std::string_view(o.key).substr(prefix.size());
      if (!name.starts_with(kPartPrefix)) return Status::Ok();
      name.remove_prefix(kPartPrefix.size());
      int64_t n = -1;
      auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
      if (ec == std::errc() && p == name.data() + name.size() && n >= 0 && n < count) {
        parts.emplace(n, o);
      }
      return Status::Ok();
    }));
    return parts;
  }

  Result<std::vector<int64_t>> ListParts(std::string_view sha256, uint64_t size) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_ASSIGN_OR_RETURN(auto parts, Parts(sha256, size));
    std::vector<int64_t> out;
    for (const auto& [n, o] : parts) out.push_back(n);
    return out;
  }

  Status PutPart(std::string_view sha256, uint64_t size, int64_t part,
                 std::string_view bytes) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_RETURN_IF_ERROR(CheckPart(size, part, bytes.size()));
    COHORT_RETURN_IF_ERROR(CheckPublishable(size));
    return s3_.PutObject(PartKey(sha256, size, part), bytes);
  }

  // Sent on to the object store as the bytes come (S3Client::PutObjectFrom): a part is never
  // gathered in memory, and a body cut short or too long stores nothing.
  bool WritesPartsAsTheyCome() const override { return true; }
  Status PutPartFrom(std::string_view sha256, uint64_t size, int64_t part, uint64_t length,
                     const PartSource& source) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_RETURN_IF_ERROR(CheckPart(size, part, length));
    COHORT_RETURN_IF_ERROR(CheckPublishable(size));
    Status s = s3_.PutObjectFrom(PartKey(sha256, size, part), length, source);
    if (s.code() == StatusCode::kInvalidArgument) {
      return Status::InvalidArgument("part " + std::to_string(part) + ": " + s.message());
    }
    return s;
  }

  Status DropUpload(std::string_view sha256, uint64_t size) {
    COHORT_ASSIGN_OR_RETURN(auto parts, Parts(sha256, size));
    std::vector<std::string> keys;
    for (const auto& [n, o] : parts) keys.push_back(o.key);
    return ParallelFor(keys.size(), kDeleteWorkers,
                       [&](size_t i) { return s3_.DeleteObject(keys[i]); });
  }

  Result<std::unique_ptr<VerifiedBlob>> Verify(std::string_view sha256, uint64_t size) override {
    return VerifyAs(sha256, size, sha256);
  }

  Result<std::unique_ptr<VerifiedBlob>> VerifyAs(std::string_view upload_name, uint64_t size,
                                                 std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    COHORT_RETURN_IF_ERROR(CheckDigest(upload_name));
    COHORT_ASSIGN_OR_RETURN(auto parts, Parts(upload_name, size));
    const int64_t count = PartCount(size);
    for (int64_t n = 0; n < count; ++n) {
      if (parts.count(n) == 0) {
        return Status::FailedPrecondition("blob " + std::string(sha256) + ": part " +
                                          std::to_string(n) + " of " + std::to_string(count) +
                                          " is missing; upload it, then complete again");
      }
    }
    // Each part is hashed as it arrives (S3Client::StreamRange): no part is held in memory,
    // only libcurl's receive buffer. A GET retried midway takes back what it hashed: the hash
    // goes back to its state at the start of the part.
    Sha256 hash, at_part_start;
    uint64_t read = 0, part_read = 0;
    std::vector<std::string> etags;
    const std::function<void()> restart = [&] {
      hash.CopyFrom(at_part_start);
      part_read = 0;
    };
    const std::function<void(std::string_view)> sink = [&](std::string_view bytes) {
      hash.Update(bytes);
      part_read += bytes.size();
    };
    for (int64_t n = 0; n < count; ++n) {
      at_part_start.CopyFrom(hash);
      std::string etag;
      // One byte more than the part's length is asked for, to see a part that is too long.
      Result<uint64_t> got = s3_.StreamRange(PartKey(upload_name, size, n), 0,
                                             PartLength(size, n) + 1, restart, sink, &etag);
      if (!got.ok()) {
        if (got.status().code() == StatusCode::kNotFound) {
          return Status::FailedPrecondition("blob " + std::string(sha256) + ": part " +
                                            std::to_string(n) + " of " + std::to_string(count) +
                                            " is missing; upload it, then complete again");
        }
        return got.status();
      }
      read += part_read;
      etags.push_back(std::move(etag));
    }
    std::string actual = hash.FinishHex();
    if (read != size || actual != sha256) {
      (void)DropUpload(upload_name, size);
      return Status::InvalidArgument(
          "the uploaded bytes (" + std::to_string(read) + " bytes, SHA-256 " + actual +
          ") are not the blob announced (" + std::to_string(size) + " bytes, SHA-256 " +
          std::string(sha256) + "); upload the file again");
    }
    return std::unique_ptr<VerifiedBlob>(new S3VerifiedBlob(
        this, std::string(upload_name), std::string(sha256), size, std::move(etags)));
  }

  Status PublishUpload(const std::string& upload_name, const std::string& sha256, uint64_t size,
                       const std::vector<std::string>& etags) {
    const std::string key = BlobKey(sha256);
    Status made;
    if (etags.empty()) {
      made = s3_.PutObject(key, "");  // the empty blob has no part
    } else {
      std::vector<S3Client::Source> sources;
      for (size_t n = 0; n < etags.size(); ++n) {
        sources.push_back({.key = PartKey(upload_name, size, int64_t(n)), .etag = etags[n]});
      }
      made = s3_.Compose(key, sources);
    }
    if (!made.ok()) {
      // Published meanwhile by a verification of the same upload (which deleted the parts).
      if (made.code() == StatusCode::kNotFound && Stat(sha256).ok()) return Status::Ok();
      if (made.code() == StatusCode::kFailedPrecondition) {
        return Status::FailedPrecondition("blob " + sha256 +
                                          ": a part was replaced after it was verified; "
                                          "complete the upload again (" +
                                          made.message() + ")");
      }
      return made;
    }
    return DropUpload(upload_name, size);
  }

  Result<std::string> Read(std::string_view sha256, uint64_t offset, uint64_t length) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    Result<std::string> bytes = s3_.GetRange(BlobKey(sha256), offset, length);
    if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("blob " + std::string(sha256) + " is not stored");
    }
    return bytes;
  }

  Status Delete(std::string_view sha256) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    return s3_.DeleteObject(BlobKey(sha256));
  }

  // S3 has no rename: the blob is copied to trash/ and deleted, `keep` is asked, and when it
  // says keep (or fails) the copy is put back unless a publication made the blob again
  // meanwhile. A publication that lands between the copy and the delete is undone by the delete,
  // but its blob was recorded before it was published (blob_store.h), so `keep` sees the record
  // and the bytes (the same: content-addressed) are put back.
  Result<bool> DeleteUnless(std::string_view sha256,
                            const std::function<Result<bool>()>& keep) override {
    COHORT_RETURN_IF_ERROR(CheckDigest(sha256));
    const std::string key = BlobKey(sha256);
    Result<uint64_t> size = s3_.HeadObject(key);
    if (!size.ok()) {
      if (size.status().code() == StatusCode::kNotFound) return false;
      return size.status();
    }
    const std::string trash =
        prefix_ + "trash/" + std::string(sha256) + "." + std::to_string(NowMillis());
    Status copied = s3_.CopyObject(key, trash, *size);
    if (!copied.ok()) {
      if (copied.code() == StatusCode::kNotFound) return false;
      return copied;
    }
    COHORT_RETURN_IF_ERROR(s3_.DeleteObject(key));
    Result<bool> kept = keep();
    if (!kept.ok() || *kept) {
      if (!Stat(sha256).ok()) COHORT_RETURN_IF_ERROR(s3_.CopyObject(trash, key, *size));
      COHORT_RETURN_IF_ERROR(s3_.DeleteObject(trash));
      if (!kept.ok()) return kept.status();
      return false;
    }
    COHORT_RETURN_IF_ERROR(s3_.DeleteObject(trash));
    return true;
  }

  Status ListBlobs(const std::function<Status(std::string_view, uint64_t)>& fn) override {
    const std::string top = prefix_ + "sha256/";
    return s3_.ListObjects(top, [&](const S3Object& o) {
      std::string_view name = std::string_view(o.key).substr(top.size());
      if (name.size() != 3 + 64 || name[2] != '/') return Status::Ok();
      name.remove_prefix(3);
      if (!IsSha256Hex(name)) return Status::Ok();
      return fn(name, o.size);
    });
  }

  Result<int64_t> DropUploadsIdleSince(int64_t idle_since_ms) override {
    const std::string top = prefix_ + "uploads/";
    std::map<std::string, std::pair<int64_t, std::vector<std::string>>> uploads;
    COHORT_RETURN_IF_ERROR(s3_.ListObjects(top, [&](const S3Object& o) {
      std::string_view rest = std::string_view(o.key).substr(top.size());
      const std::string upload(rest.substr(0, rest.find('/')));
      auto [it, fresh] =
          uploads.try_emplace(upload, o.last_modified_ms, std::vector<std::string>{});
      it->second.first = std::max(it->second.first, o.last_modified_ms);  // the last part
      it->second.second.push_back(o.key);
      return Status::Ok();
    }));
    int64_t dropped = 0;
    for (const auto& [upload, entry] : uploads) {
      if (entry.first >= idle_since_ms) continue;
      for (const std::string& key : entry.second) COHORT_RETURN_IF_ERROR(s3_.DeleteObject(key));
      ++dropped;
    }
    // The bucket's own multipart uploads of the keys this store composes (a publication into
    // sha256/, a large copy into or out of trash/), left open by a crash or a failed abort:
    // their parts are stored, and billed, until aborted. One begun before the grace period is no
    // publication still running. Nothing else of the bucket is listed. Credentials without the
    // permission to list them (s3:ListBucketMultipartUploads, docs/operations.md) leave them
    // (403): the rest of the sweep is not failed for it.
    for (const char* under : {"sha256/", "trash/"}) {
      Status listed = s3_.ListMultipartUploads(
          prefix_ + under, [&](const S3Client::PendingMultipart& u) -> Status {
            if (u.initiated_ms <= 0 || u.initiated_ms >= idle_since_ms) return Status::Ok();
            COHORT_RETURN_IF_ERROR(s3_.AbortMultipartUpload(u.key, u.upload_id));
            ++dropped;
            return Status::Ok();
          });
      if (!listed.ok() && listed.code() != StatusCode::kPermissionDenied) return listed;
    }
    return dropped;
  }

  std::string Describe() const override { return s3_.Describe(); }

 private:
  S3Client s3_;
  std::string prefix_;
};

Status S3VerifiedBlob::Publish() {
  return store_->PublishUpload(upload_name_, sha256_, size_, etags_);
}

}  // namespace

Result<std::unique_ptr<BlobStore>> OpenS3BlobStore(S3Config config) {
  COHORT_RETURN_IF_ERROR(CheckS3Config(config));
  if (!config.prefix.empty() && !config.prefix.ends_with("/")) config.prefix += "/";
  auto store = std::make_unique<S3BlobStore>(std::move(config));
  COHORT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<BlobStore>(std::move(store));
}

Result<std::unique_ptr<BlobStore>> OpenConfiguredBlobStore(wal::FileSystem* fs,
                                                           const std::string& blob_dir,
                                                           const std::string& default_dir,
                                                           const S3Config& s3, bool shared) {
  if (s3.requested()) {
    if (!blob_dir.empty()) {
      return Status::InvalidArgument(
          "--blob-dir and --blob-s3-endpoint/--blob-s3-bucket name two blob stores: give one "
          "(COHORT_BLOB_DIR and COHORT_BLOB_S3_* count too)");
    }
    return OpenS3BlobStore(s3);
  }
  if (shared && blob_dir.empty()) {
    // Several servers share the store: blobs in a directory of this server's own would be
    // invisible to the others (their uploads to it, its downloads of theirs).
    return Status::FailedPrecondition(
        "the store is PostgreSQL, which several servers share, and no blob store is given: name "
        "the one they all use with --blob-dir (a directory on a file system every server "
        "mounts; COHORT_BLOB_DIR) or --blob-s3-endpoint and --blob-s3-bucket "
        "(COHORT_BLOB_S3_*). A server that is the only one may keep its own directory by "
        "naming it: --blob-dir " +
        default_dir);
  }
  return OpenLocalBlobStore(fs, blob_dir.empty() ? default_dir : blob_dir,
                            LocalBlobStoreOptions{.shared = shared});
}

}  // namespace cohort::blob
