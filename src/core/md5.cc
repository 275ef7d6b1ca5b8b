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
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Md5::Md5() : ctx_(std::make_unique<Ctx>()) {
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_md5(), nullptr) != 1) std::abort();
}

Md5::~Md5() = default;

void Md5::Update(std::string_view data) {
  if (EVP_DigestUpdate(ctx_->md, data.data(), data.size()) != 1) std::abort();
}

std::string Md5::FinishBase64() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md, &len) != 1) std::abort();
  if (EVP_DigestInit_ex(ctx_->md, EVP_md5(), nullptr) != 1) std::abort();
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(md), len));
}

}  // namespace cohort
