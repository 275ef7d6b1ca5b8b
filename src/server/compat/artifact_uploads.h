// Uploads of the vendor's artifact files, streamed into the blob store (docs/compat.md,
// "Artifacts"): a request body of any size is read in chunks as it arrives and written as blob
// parts of kBlobPartBytes as each fills (one part in memory), its MD5 and SHA-256 computed on
// the way. Only when the MD5 is the one the client announced, and the stored parts re-read by
// the blob store have that SHA-256, is the blob recorded for the entity and then published;
// otherwise nothing is recorded and the parts, under a name nobody else uses, are left to the
// sweep of abandoned uploads (`cohort gc`).
//
// Thread-safe; each call runs on its request's handler thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/message.h"

namespace cohort::compat {

// The 16 bytes of an MD5 given as 32 lowercase hex digits; empty when `hex` is not that.
std::string Md5FromHex(std::string_view hex);

struct StreamedBlob {
  std::string sha256;  // hex
  uint64_t size = 0;
  std::string md5_raw;  // the 16 digest bytes
};

// Streams `body` into the blob store and records the blob for `entity` (see above). `what`
// names the upload in errors ("artifact file \"model.pt\""). Errors: kPayloadTooLarge over
// --max-artifact-file-bytes (before a byte is read); kInvalidArgument when the MD5 is not
// `md5_hex` (lowercase hex); the body reader's error when the connection was cut; the blob
// store's or the store's otherwise.
Result<StreamedBlob> StreamIntoBlobStore(api::ApiContext* ctx, http::BodyReader* body,
                                         const std::string& entity, std::string_view md5_hex,
                                         std::string_view what);

// The vendor's multipart upload of a file of 2 GiB or more (docs/compat.md, "Artifacts"): each
// part was uploaded (StreamIntoBlobStore) as a blob of its own that `entity` holds, found here by
// its MD5; they are read in order into the blob of the whole file, whose MD5 must be `md5_hex`,
// recorded for the entity and published. The part blobs stay until `cohort gc` (nothing
// references them). Errors: kFailedPrecondition naming a part that was not uploaded,
// kPayloadTooLarge over --max-artifact-file-bytes, kInvalidArgument on an MD5 mismatch.
Result<StreamedBlob> AssembleMultipartUpload(api::ApiContext* ctx, const std::string& entity,
                                             std::string_view md5_hex,
                                             const std::vector<std::string>& part_md5_hex,
                                             std::string_view what);

}  // namespace cohort::compat
