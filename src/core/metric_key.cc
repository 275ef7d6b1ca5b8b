#include "core/metric_key.h"

#include <cstring>

#include "core/limits.h"
#include "core/utf8.h"

namespace cohort {

std::string_view InvalidKeyReason(std::string_view key) {
  static_assert(limits::kMaxKeyBytes == 256, "the message below names the limit");
  if (key.empty()) return "is empty";
  if (key.size() > limits::kMaxKeyBytes) return "is longer than 256 bytes";
  if (key.starts_with(limits::kSystemKeyPrefix)) {
    return "starts with \"system/\", which is reserved for system metrics";
  }
  if (std::memchr(key.data(), '\0', key.size()) != nullptr) return "contains a NUL byte";
  if (!utf8::IsValid(key)) return "is not valid UTF-8";
  return {};
}

}  // namespace cohort
