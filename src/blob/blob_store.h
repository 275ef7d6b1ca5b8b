// The blob store: bytes named by their SHA-256, shared by artifacts (and media), uploaded in
// resumable parts and checked before anyone can read them (docs/artifacts.md, "The blob store").
//
// An upload is named by (sha256, size) alone: parts of kBlobPartBytes (all full but the last)
// may arrive in any order, from several requests, servers or clients at once, and again after a
// crash; ListParts says which are stored. Verify reads the parts in order, checks the size and
// the SHA-256 and hands back a blob that is not yet readable: the caller records it (the
// database) and then publishes it, so that a garbage collection running meanwhile never removes
// a blob someone has just recorded (docs/artifacts.md, "Garbage collection").
//
// Which entities hold a blob is not the store's business (the `blobs` table is): a blob store
// only knows bytes.
//
// Threading: every method is thread-safe, also for the same blob or upload from several
// threads or processes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::wal {
class FileSystem;
}

namespace cohort::blob {

// The number of parts of a blob of `size` bytes (0 for an empty blob).
int64_t PartCount(uint64_t size);
// The length of part `part` of a blob of `size` bytes (the last one may be short).
uint64_t PartLength(uint64_t size, int64_t part);
// kInvalidArgument naming the problem unless `part` is a part of a blob of `size` bytes and
// `length` its length.
Status CheckPart(uint64_t size, int64_t part, uint64_t length);

// The name of `owner`'s upload of the blob `sha256` (64 lowercase hex digits, for PutPart,
// ListParts and VerifyAs): SHA-256 of "cohort upload v1", the owner and the digest. Each owner
// (an entity) uploads apart: nobody lists, completes or spoils another owner's unfinished upload,
// so holding a blob always means having sent its bytes (or having had them recorded before).
std::string OwnedUploadName(std::string_view owner, std::string_view sha256);

// The bytes of one part as they arrive (a request body): each call hands out the next bytes
// (valid until the next call), empty once all were handed out; an error ends the part.
using PartSource = std::function<Result<std::string_view>()>;

// A blob whose bytes were checked but that nobody can read yet. Dropping it without Publish
// discards it (its parts are kept, so the upload can be verified again).
class VerifiedBlob {
 public:
  virtual ~VerifiedBlob() = default;
  // Makes the blob readable (durably). OK when it was published already.
  virtual Status Publish() = 0;
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // The size of the stored blob; kNotFound when there is none.
  virtual Result<uint64_t> Stat(std::string_view sha256) = 0;

  // The parts of the unfinished upload of (sha256, size) that are stored, ascending.
  virtual Result<std::vector<int64_t>> ListParts(std::string_view sha256, uint64_t size) = 0;
  // Stores part `part` of the upload of (sha256, size) durably, replacing one stored before.
  // kInvalidArgument when `bytes` is not that part's length (CheckPart) or sha256 is malformed.
  virtual Status PutPart(std::string_view sha256, uint64_t size, int64_t part,
                         std::string_view bytes) = 0;
  // PutPart of a part of `length` bytes read from `source` as they arrive. The part is stored
  // only when `source` handed out exactly `length` bytes (kInvalidArgument naming the count
  // otherwise, or `source`'s own error). This base version gathers the part in memory (at most
  // kBlobPartBytes) and calls PutPart; a backend that can write as the bytes come overrides it.
  virtual Status PutPartFrom(std::string_view sha256, uint64_t size, int64_t part, uint64_t length,
                             const PartSource& source);
  // Whether PutPartFrom writes the bytes as they come, holding no more than one piece of the
  // source at a time (false: it gathers the part, up to kBlobPartBytes, in memory). The part
  // route reserves its requests' memory accordingly.
  virtual bool WritesPartsAsTheyCome() const { return false; }
  // Checks that every part is stored (kFailedPrecondition naming the first missing one) and
  // that the bytes have this size and SHA-256 (kInvalidArgument naming both digests otherwise;
  // the upload's parts are then dropped). The result is published with VerifiedBlob::Publish.
  virtual Result<std::unique_ptr<VerifiedBlob>> Verify(std::string_view sha256, uint64_t size) = 0;
  // Verify for an upload whose SHA-256 was not known while its parts were stored (a request
  // body hashed as it streamed in): its parts were put under `upload_name` (64 lowercase hex
  // digits made up by the caller, unique to the upload) and `size`; they are checked to be the
  // bytes of `sha256`, which the result publishes. On a mismatch the parts are dropped. This
  // base version handles only upload_name == sha256 (kFailedPrecondition otherwise); a backend
  // overrides it.
  virtual Result<std::unique_ptr<VerifiedBlob>> VerifyAs(std::string_view upload_name,
                                                         uint64_t size, std::string_view sha256);

  // Bytes [offset, offset + length) of a blob (fewer at its end); kNotFound without the blob.
  virtual Result<std::string> Read(std::string_view sha256, uint64_t offset, uint64_t length) = 0;

  // Removes a blob; OK when there is none.
  virtual Status Delete(std::string_view sha256) = 0;
  // Removes a blob unless `keep`, asked after the blob was moved out of readers' reach, says to
  // keep it (then it is put back). A blob published again meanwhile (an upload that recorded it
  // after `keep` answered) stays. Returns whether it was removed.
  virtual Result<bool> DeleteUnless(std::string_view sha256,
                                    const std::function<Result<bool>()>& keep) = 0;
  // Calls `fn(sha256, size)` for every stored blob, in no particular order.
  virtual Status ListBlobs(const std::function<Status(std::string_view, uint64_t)>& fn) = 0;
  // Drops unfinished uploads that no part has reached since `idle_since_ms` (their last part
  // arrived before it: an upload that is still receiving parts is kept, however long ago it
  // began). Returns how many.
  virtual Result<int64_t> DropUploadsIdleSince(int64_t idle_since_ms) = 0;

  // Where the blobs are, for logs ("local /var/lib/cohort/blobs").
  virtual std::string Describe() const = 0;
};

struct LocalBlobStoreOptions {
  // Other servers write into the same directory (servers sharing a PostgreSQL store): a
  // completion reads every byte of the upload and publishes a copy of what it read, instead of
  // trusting the hash this server computed as parts arrived and renaming the upload's file
  // (docs/operations.md, "Object storage").
  bool shared = false;
};

// Blobs as files under `root` (docs/artifacts.md, "local"), through `fs` (which must outlive the
// store). Creates `root` when missing.
Result<std::unique_ptr<BlobStore>> OpenLocalBlobStore(wal::FileSystem* fs, std::string root,
                                                      LocalBlobStoreOptions options = {});

}  // namespace cohort::blob
