// ByteReader: a bounds-checked reader over an encoded byte string (the agent's frames and
// LogBatch records, protocol.h); the first failure sticks, and every read after it returns 0 or
// an empty view, so a decoder checks ok() once at the end of a section.
//
// Threading: a value type; one thread at a time.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/coding.h"

namespace cohort::agent {

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  uint64_t Varint() {
    uint64_t v = 0;
    if (ok_ && !in_.empty() && !(uint8_t(in_[0]) & 0x80)) {  // one byte: the usual case
      v = uint8_t(in_[0]);
      in_.remove_prefix(1);
      return v;
    }
    if (ok_ && !coding::GetVarint64(&in_, &v)) ok_ = false;
    return ok_ ? v : 0;
  }
  uint8_t Byte() {
    if (!ok_ || in_.empty()) {
      ok_ = false;
      return 0;
    }
    uint8_t b = uint8_t(in_[0]);
    in_.remove_prefix(1);
    return b;
  }
  double Double() {
    if (!ok_ || in_.size() < 8) {
      ok_ = false;
      return 0;
    }
    double d = coding::BitsDouble(coding::DecodeFixed64(in_.data()));
    in_.remove_prefix(8);
    return d;
  }
  std::string_view Bytes(uint64_t n) {
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string_view s = in_.substr(0, n);
    in_.remove_prefix(n);
    return s;
  }
  // A count of items that each need at least `min_bytes`: guards against absurd allocations.
  uint64_t Count(size_t min_bytes) {
    uint64_t n = Varint();
    if (ok_ && n > in_.size() / (min_bytes ? min_bytes : 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  bool ok() const { return ok_; }
  bool done() const { return in_.empty(); }
  std::string_view rest() const { return in_; }

 private:
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace cohort::agent
