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

}  // namespace cohort
