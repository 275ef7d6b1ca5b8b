#include "agent/sha256.h"

#include <openssl/evp.h>

#include <string>

namespace cohort::agent {
namespace {

constexpr size_t kChunkBytes = 1 << 20;

std::string Hex(const unsigned char* md, unsigned len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::Update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  return Hex(md, len);
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

Result<FileDigest> HashFile(wal::FileSystem* fs, const std::string& path,
                            const std::string& copy_to,
                            const std::function<void(int64_t)>& on_bytes) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<wal::SequentialFile> in, fs->NewSequentialFile(path));
  std::unique_ptr<wal::WritableFile> out;
  if (!copy_to.empty()) {
    COHORT_ASSIGN_OR_RETURN(out, fs->NewWritableFile(copy_to, wal::WriteMode::kTruncate));
  }
  Sha256 h;
  FileDigest d;
  std::string buf(kChunkBytes, '\0');
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::string_view got, in->Read(buf.size(), buf.data()));
    if (got.empty()) break;
    h.Update(got);
    if (out) COHORT_RETURN_IF_ERROR(out->Append(got));
    d.size += int64_t(got.size());
    if (on_bytes) on_bytes(int64_t(got.size()));
    if (got.size() < buf.size()) break;
  }
  if (out) {
    COHORT_RETURN_IF_ERROR(out->Sync());
    COHORT_RETURN_IF_ERROR(out->Close());
  }
  d.sha256 = h.HexDigest();
  return d;
}

}  // namespace cohort::agent
