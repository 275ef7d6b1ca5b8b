#include "core/ids.h"

#include <sys/random.h>

#include <random>

#include "core/limits.h"
#include "core/text_encoding.h"

namespace cohort::ids {
namespace {

void FillRandom(unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r <= 0) {  // extremely unlikely; fall back to random_device
      std::random_device rd;
      for (; got < n; ++got) buf[got] = static_cast<unsigned char>(rd());
      return;
    }
    got += size_t(r);
  }
}

}  // namespace

std::string RandomBase36(size_t n) {
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out(n, '0');
  std::string raw(n * 2, '\0');
  FillRandom(reinterpret_cast<unsigned char*>(raw.data()), raw.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned v = (unsigned(uint8_t(raw[2 * i])) << 8) | uint8_t(raw[2 * i + 1]);
    out[i] = kAlphabet[v % 36];
  }
  return out;
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  FillRandom(reinterpret_cast<unsigned char*>(raw.data()), raw.size());
  return HexLower(raw);
}

bool IsValidId(std::string_view s) {
  if (s.empty() || s.size() > limits::kMaxIdBytes) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Status CheckProjectName(std::string_view project) {
  if (IsValidId(project)) return Status::Ok();
  return Status::InvalidArgument("project: invalid name '" + std::string(project) +
                                 "' (1-64 characters of letters, digits, '_', '-', '.')");
}

}  // namespace cohort::ids
