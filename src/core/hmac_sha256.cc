#include "core/hmac_sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>

#include "core/text_encoding.h"

namespace cohort {

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // An empty key: a non-null pointer (OpenSSL takes a null key as "reuse the previous one").
  static const char kNoKey = 0;
  const void* k = key.empty() ? &kNoKey : key.data();
  if (HMAC(EVP_sha256(), k, int(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), md, &len) == nullptr) {
    std::abort();  // only out of memory or a broken libcrypto
  }
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  return HexLower(HmacSha256(key, message));
}

}  // namespace cohort
