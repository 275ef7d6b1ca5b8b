#include "core/md5.h"

#include <openssl/evp.h>

#include <cstdlib>

#include "core/text_encoding.h"

namespace cohort {

std::string Md5Base64(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_md5(), nullptr) != 1) std::abort();
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(md), len));
}

struct Md5::Ctx {
  EVP_MD_CTX* md = nullptr;
};

namespace {
void InitMd5(EVP_MD_CTX* md) {
  if (EVP_DigestInit_ex(md, EVP_md5(), nullptr) != 1) std::abort();  // out of memory
}
}  // namespace

Md5::Md5() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr) std::abort();
  InitMd5(ctx_->md);
}

Md5::~Md5() { EVP_MD_CTX_free(ctx_->md); }

void Md5::Update(std::string_view data) {
  if (!data.empty() && EVP_DigestUpdate(ctx_->md, data.data(), data.size()) != 1) std::abort();
}

std::string Md5::FinishRaw() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md, &len) != 1) std::abort();
  InitMd5(ctx_->md);
  return std::string(reinterpret_cast<const char*>(md), len);
}

}  // namespace cohort
