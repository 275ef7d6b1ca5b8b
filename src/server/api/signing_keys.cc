#include "server/api/signing_keys.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/hmac_sha256.h"
#include "core/ids.h"
#include "core/text_encoding.h"

namespace cohort::api {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

// The keys of `text` separated by any of `seps`, trimmed; empty ones and "#" comments skipped.
std::vector<std::string> Split(std::string_view text, std::string_view seps) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t end = text.find_first_of(seps);
    std::string part = Trim(text.substr(0, end));
    if (!part.empty() && part.front() != '#') out.push_back(std::move(part));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

// Creates `file` (mode 0600) holding one new key; false when it exists already. The key is
// written and synced under a temporary name first and linked to `file` (which fails if another
// process made it meanwhile), so `file` never exists without its key: a start killed while
// writing it left an empty file that stopped every later start ("no signing key").
Result<bool> CreateKeyFile(const std::string& file) {
  if (::access(file.c_str(), F_OK) == 0) return false;
  const std::string tmp = file + ".new-" + ids::RandomHex(8);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IOError("cannot create signing key file " + tmp + ": " + std::strerror(errno));
  }
  const std::string text = ids::RandomHex(32) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::IOError("cannot write signing key file " + tmp);
  }
  const int linked = ::link(tmp.c_str(), file.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && link_errno == EEXIST) return false;  // another server made it meanwhile
  if (linked != 0) {
    return Status::IOError("cannot create signing key file " + file + ": " +
                           std::strerror(link_errno));
  }
  const std::string dir =
      file.find('/') == std::string::npos ? "." : file.substr(0, file.rfind('/') + 1);
  if (int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    (void)::fsync(d);  // the new name survives a power loss (or the key is made anew)
    ::close(d);
  }
  return true;
}

Result<std::string> ReadKeyFile(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("cannot read signing key file " + file + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_mode & 077) != 0) {
    ::close(fd);
    return Status::FailedPrecondition("signing key file " + file +
                                      " is readable by other users: chmod 600 it");
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, size_t(n));
  ::close(fd);
  if (n < 0) return Status::IOError("cannot read signing key file " + file);
  return text;
}

}  // namespace

Result<SigningKeys> SigningKeys::FromKeys(std::vector<std::string> keys, std::string_view source) {
  if (keys.empty()) return Status::InvalidArgument(std::string(source) + ": no signing key");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].size() < kMinSigningKeyBytes) {
      return Status::InvalidArgument(std::string(source) + ": signing key " +
                                     std::to_string(i + 1) + " is shorter than " +
                                     std::to_string(kMinSigningKeyBytes) + " characters");
    }
  }
  SigningKeys out;
  out.keys_ = std::move(keys);
  return out;
}

Result<SigningKeys> SigningKeys::Load(const std::string& file, const char* env_value,
                                      bool* created) {
  *created = false;
  if (env_value != nullptr) {
    // Commas (key1,key2) or newlines: "$(cat keyfile)" holds one key a line.
    std::vector<std::string> keys = Split(env_value, ",\n");
    for (size_t i = 0; i < keys.size(); ++i) {
      // Keys run together ("key1 key2"): other whitespace is never part of a key here.
      if (size_t at = keys[i].find_first_of(" \t\r\v\f"); at != std::string::npos) {
        return Status::InvalidArgument(
            std::string(kSigningKeysEnv) + ": signing key " + std::to_string(i + 1) +
            " holds whitespace at its character " + std::to_string(at + 1) +
            ": separate the keys with commas or newlines");
      }
    }
    return FromKeys(std::move(keys), kSigningKeysEnv);
  }
  COHORT_ASSIGN_OR_RETURN(*created, CreateKeyFile(file));
  COHORT_ASSIGN_OR_RETURN(std::string text, ReadKeyFile(file));
  if (!*created && text.empty()) {
    // Left empty by a start of an older build killed while writing it: no URL was ever signed
    // with it, so a new key replaces it.
    std::fprintf(stderr, "cohort: signing key file %s is empty; making a new key\n", file.c_str());
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      return Status::IOError("cannot replace the empty signing key file " + file + ": " +
                             std::strerror(errno));
    }
    COHORT_ASSIGN_OR_RETURN(*created, CreateKeyFile(file));
    COHORT_ASSIGN_OR_RETURN(text, ReadKeyFile(file));
  }
  return FromKeys(Split(text, "\n"), file);
}

std::string SigningKeys::Sign(std::string_view message) const {
  return HmacSha256Hex(keys_.front(), message);
}

bool SigningKeys::Verify(std::string_view message, std::string_view signature) const {
  bool match = false;
  for (const std::string& key : keys_) {
    const std::string want = HmacSha256Hex(key, message);
    match |= want.size() == signature.size() &&
             CRYPTO_memcmp(want.data(), signature.data(), want.size()) == 0;
  }
  return match;
}

}  // namespace cohort::api
