// SigningKeys: the server's secrets for signing URLs that carry their own credentials (the W&B
// upload URLs, src/server/compat/run_files.h). They are kept outside the store, so that reading
// the database (a copy, a dump, a replica) does not let anyone forge a URL; the servers of one
// deployment share them. Several keys make rotation possible: the first signs, every one is
// accepted.
//
// Sources, first found wins: the environment variable COHORT_SIGNING_KEYS (separated by commas or
// newlines: "$(cat file)" of a key file; a key holding other whitespace is refused), else
// a file with one key a line (mode 0600 or stricter; created with one new key when it does not
// exist). Each key is at least kMinSigningKeyBytes characters.
//
// Threading: immutable after Load; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::api {

inline constexpr size_t kMinSigningKeyBytes = 32;
inline constexpr const char* kSigningKeysEnv = "COHORT_SIGNING_KEYS";

class SigningKeys {
 public:
  // From `env_value` when it is set (not null), else from `file`. `*created` tells whether the
  // file was made now. Errors name the source and the problem (short key, readable by others).
  static Result<SigningKeys> Load(const std::string& file, const char* env_value, bool* created);
  // Keys given directly (tests).
  static Result<SigningKeys> FromKeys(std::vector<std::string> keys, std::string_view source);

  // Hex HMAC-SHA256 of `message` with the first key.
  std::string Sign(std::string_view message) const;
  // Whether `signature` is the HMAC of `message` with any of the keys (constant-time compares).
  bool Verify(std::string_view message, std::string_view signature) const;

  size_t size() const { return keys_.size(); }

 private:
  std::vector<std::string> keys_;
};

}  // namespace cohort::api
