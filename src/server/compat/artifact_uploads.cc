#include "server/compat/artifact_uploads.h"

#include <algorithm>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/limits.h"
#include "core/md5.h"
#include "core/sha256.h"
#include "core/text_encoding.h"
#include "store/store.h"

namespace cohort::compat {

Result<StreamedBlob> StreamIntoBlobStore(api::ApiContext* ctx, http::BodyReader* body,
                                         const std::string& entity, std::string_view md5_hex,
                                         std::string_view what) {
  if (body == nullptr) return Status::Internal("artifact upload: the body is not streamed");
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  const uint64_t size = body->length();
  COHORT_RETURN_IF_ERROR(api::CheckArtifactFileSize(ctx->limits, what, size));
  // The SHA-256 is known only at the end: the parts go under a name of this upload's own.
  const std::string upload_name = RandomHex(32);
  Md5 md5;
  Sha256 sha;
  std::string part;
  part.reserve(static_cast<size_t>(std::min<uint64_t>(size, limits::kBlobPartBytes)));
  int64_t part_index = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::string_view chunk, body->Next());
    if (chunk.empty()) break;
    md5.Update(chunk);
    sha.Update(chunk);
    while (!chunk.empty()) {
      const size_t want = static_cast<size_t>(blob::PartLength(size, part_index)) - part.size();
      const size_t take = std::min(want, chunk.size());
      part.append(chunk.substr(0, take));
      chunk.remove_prefix(take);
      if (part.size() == blob::PartLength(size, part_index)) {
        COHORT_RETURN_IF_ERROR(ctx->blobs->PutPart(upload_name, size, part_index, part));
        part.clear();
        ++part_index;
      }
    }
  }
  StreamedBlob out;
  out.size = size;
  out.md5_raw = md5.FinishRaw();
  const std::string got_md5 = HexLower(out.md5_raw);
  if (got_md5 != md5_hex) {
    return Status::InvalidArgument(std::string(what) + ": the uploaded bytes have MD5 " +
                                   got_md5 + ", not " + std::string(md5_hex) +
                                   " as announced (the file changed while it was uploaded?); "
                                   "nothing was stored");
  }
  out.sha256 = sha.FinishHex();
  COHORT_ASSIGN_OR_RETURN(auto verified, ctx->blobs->VerifyAs(upload_name, size, out.sha256));
  // Recorded before it is published (docs/artifacts.md, "Garbage collection").
  COHORT_RETURN_IF_ERROR(ctx->store->RecordBlob(entity, out.sha256, int64_t(size), NowMillis(),
                                                Base64Encode(out.md5_raw)));
  COHORT_RETURN_IF_ERROR(verified->Publish());
  return out;
}

}  // namespace cohort::compat
