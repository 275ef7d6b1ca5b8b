// MD5 as the W&B clients name files (base64 of the digest): only to match their names, never to
// check integrity (Cohort checks SHA-256, core/sha256.h). In cohort_digest (libcrypto).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace cohort {

// The base64 (standard alphabet, padded) of the MD5 of `data`.
std::string Md5Base64(std::string_view data);

// MD5 of bytes that arrive in pieces (a streamed upload).
class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  void Update(std::string_view data);
  // The 16 digest bytes of everything updated so far; the object starts over.
  std::string FinishRaw();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace cohort
