#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

#include "core/text_encoding.h"

namespace cohort {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

namespace {
void Init(EVP_MD_CTX* md) {
  // Fails only when out of memory or with a broken libcrypto: nothing sensible to do then.
  if (EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1) std::abort();
}
}  // namespace

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr) std::abort();
  Init(ctx_->md);
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::Update(std::string_view data) {
  if (!data.empty() && EVP_DigestUpdate(ctx_->md, data.data(), data.size()) != 1) std::abort();
}

void Sha256::CopyFrom(const Sha256& other) {
  if (this != &other && EVP_MD_CTX_copy_ex(ctx_->md, other.ctx_->md) != 1) std::abort();
}

std::string Sha256::FinishHex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md, &len) != 1) std::abort();
  Init(ctx_->md);
  return HexLower(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string Sha256::Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.FinishHex();
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace cohort
