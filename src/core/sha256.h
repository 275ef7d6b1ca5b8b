// SHA-256, streaming: the digest of blobs and artifact files (docs/artifacts.md). A thin wrapper
// of OpenSSL's EVP interface, in its own library (cohort_digest) so that only what hashes links
// libcrypto.
//
// Threading: a Sha256 belongs to one thread at a time.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

namespace cohort {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  // Makes this hash's state that of `other` (what it has been updated with so far): a snapshot
  // to go back to when bytes fed to it must be taken back (a request retried midway).
  void CopyFrom(const Sha256& other);
  // The digest of everything updated so far as 64 lowercase hex digits; the object starts over.
  std::string FinishHex();

  // The hex digest of `data`.
  static std::string Hex(std::string_view data);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// Whether `s` is 64 lowercase hex digits (the form every SHA-256 takes in Cohort).
bool IsSha256Hex(std::string_view s);

}  // namespace cohort
