#include "server/compat/artifact_uploads.h"

#include <algorithm>
#include <vector>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/limits.h"
#include "core/md5.h"
#include "core/sha256.h"
#include "core/text_encoding.h"
#include "store/store.h"

namespace cohort::compat {

std::string Md5FromHex(std::string_view hex) {
  if (hex.size() != 32) return "";
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (char c : hex.substr(i, 2)) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return "";
      v = v * 16 + d;
    }
    out.push_back(static_cast<char>(v));
  }
  return out;
}

namespace {

// Bytes that arrive in order, written as the parts of a blob of a known size (one part in
// memory) under a name of their own, hashed on the way.
class BlobPartWriter {
 public:
  BlobPartWriter(blob::BlobStore* blobs, uint64_t size)
      : blobs_(blobs), size_(size), upload_name_(ids::RandomHex(32)) {
    part_.reserve(static_cast<size_t>(std::min<uint64_t>(size, limits::kBlobPartBytes)));
  }

  Status Append(std::string_view bytes) {
    if (bytes.size() > size_ - written_) {
      return Status::InvalidArgument("more bytes than the " + std::to_string(size_) + " announced");
    }
    md5_.Update(bytes);
    sha_.Update(bytes);
    written_ += bytes.size();
    while (!bytes.empty()) {
      const uint64_t length = blob::PartLength(size_, part_index_);
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(length - part_.size(), bytes.size()));
      part_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (part_.size() == length) {
        COHORT_RETURN_IF_ERROR(blobs_->PutPart(upload_name_, size_, part_index_, part_));
        part_.clear();
        ++part_index_;
      }
    }
    return Status::Ok();
  }

  // Once every byte was appended: unless the MD5 is `md5_hex`, kInvalidArgument and nothing is
  // recorded; otherwise the blob store checks the stored parts against the SHA-256, and the blob
  // is recorded for `entity` and then published.
  Result<StreamedBlob> Finish(store::Store* store, const std::string& entity,
                              std::string_view md5_hex, std::string_view what) {
    if (written_ != size_) {
      return Status::Internal(std::string(what) + ": " + std::to_string(written_) + " of " +
                              std::to_string(size_) + " bytes written");
    }
    StreamedBlob out;
    out.size = size_;
    out.md5_raw = md5_.FinishRaw();
    const std::string got_md5 = HexLower(out.md5_raw);
    if (got_md5 != md5_hex) {
      return Status::InvalidArgument(std::string(what) + ": the uploaded bytes have MD5 " +
                                     got_md5 + ", not " + std::string(md5_hex) +
                                     " as announced (the file changed while it was uploaded?); "
                                     "nothing was stored");
    }
    out.sha256 = sha_.FinishHex();
    COHORT_ASSIGN_OR_RETURN(auto verified, blobs_->VerifyAs(upload_name_, size_, out.sha256));
    // Recorded before it is published (docs/artifacts.md, "Garbage collection").
    COHORT_RETURN_IF_ERROR(store->RecordBlob(entity, out.sha256, int64_t(size_), NowMillis(),
                                             Base64Encode(out.md5_raw)));
    COHORT_RETURN_IF_ERROR(verified->Publish());
    return out;
  }

 private:
  blob::BlobStore* blobs_;
  const uint64_t size_;
  const std::string upload_name_;
  Md5 md5_;
  Sha256 sha_;
  std::string part_;
  int64_t part_index_ = 0;
  uint64_t written_ = 0;
};

}  // namespace

Result<StreamedBlob> StreamIntoBlobStore(api::ApiContext* ctx, http::BodyReader* body,
                                         const std::string& entity, std::string_view md5_hex,
                                         std::string_view what) {
  if (body == nullptr) return Status::Internal("artifact upload: the body is not streamed");
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  COHORT_RETURN_IF_ERROR(api::CheckArtifactFileSize(ctx->limits, what, body->length()));
  BlobPartWriter writer(ctx->blobs, body->length());
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::string_view chunk, body->Next());
    if (chunk.empty()) break;
    COHORT_RETURN_IF_ERROR(writer.Append(chunk));
  }
  return writer.Finish(ctx->store, entity, md5_hex, what);
}

Result<StreamedBlob> AssembleMultipartUpload(api::ApiContext* ctx, const std::string& entity,
                                             std::string_view md5_hex,
                                             const std::vector<std::string>& part_md5_hex,
                                             std::string_view what) {
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  if (part_md5_hex.empty()) return Status::InvalidArgument(std::string(what) + ": no parts");
  std::vector<std::string> md5s;
  for (const std::string& hex : part_md5_hex) {
    const std::string raw = Md5FromHex(hex);
    if (raw.empty()) {
      return Status::InvalidArgument(std::string(what) + ": part MD5 \"" + hex +
                                     "\" is not 32 lowercase hex digits");
    }
    md5s.push_back(Base64Encode(raw));
  }
  COHORT_ASSIGN_OR_RETURN(auto held, ctx->store->BlobsByMd5(entity, md5s));
  uint64_t total = 0;
  for (size_t k = 0; k < md5s.size(); ++k) {
    auto it = held.find(md5s[k]);
    if (it == held.end()) {
      return Status::FailedPrecondition(std::string(what) + ": part " + std::to_string(k + 1) +
                                        " (MD5 " + part_md5_hex[k] +
                                        ") was not uploaded; upload it, then complete again");
    }
    total += uint64_t(it->second.size);
  }
  COHORT_RETURN_IF_ERROR(api::CheckArtifactFileSize(ctx->limits, what, total));
  BlobPartWriter writer(ctx->blobs, total);
  for (const std::string& md5 : md5s) {
    const store::BlobByMd5& part = held.at(md5);
    for (uint64_t offset = 0; offset < uint64_t(part.size);) {
      const uint64_t length = std::min<uint64_t>(limits::kBlobPartBytes, part.size - offset);
      COHORT_ASSIGN_OR_RETURN(std::string bytes, ctx->blobs->Read(part.sha256, offset, length));
      if (bytes.size() != length) {
        return Status::Corruption("blob " + part.sha256 + " is shorter than recorded");
      }
      COHORT_RETURN_IF_ERROR(writer.Append(bytes));
      offset += length;
    }
  }
  return writer.Finish(ctx->store, entity, md5_hex, what);
}

}  // namespace cohort::compat
