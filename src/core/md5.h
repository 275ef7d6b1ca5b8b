// MD5 as the W&B clients name files (base64 of the digest): only to match their names, never to
// check integrity (Cohort checks SHA-256, core/sha256.h). In cohort_digest (libcrypto).
#pragma once

#include <string>
#include <string_view>

namespace cohort {

// The base64 (standard alphabet, padded) of the MD5 of `data`.
std::string Md5Base64(std::string_view data);

}  // namespace cohort
