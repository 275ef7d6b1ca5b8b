// Byte coding used by the WAL and chunk formats: little-endian fixed-width integers, LEB128
// varints, zigzag. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cohort::coding {

inline void PutFixed32(std::string* dst, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = char(v >> (8 * i));
  dst->append(b, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = char(v >> (8 * i));
  dst->append(b, 8);
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}
inline void PutVarint64(std::string* dst, uint64_t v) {
  char b[10];
  int n = 0;
  while (v >= 0x80) {
    b[n++] = char(v | 0x80);
    v >>= 7;
  }
  b[n++] = char(v);
  dst->append(b, n);
}
// Reads a varint from the front of `in` and advances it. False on truncation or overflow.
inline bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; shift <= 63 && i < int(in->size()); shift += 7, ++i) {
    uint64_t byte = uint8_t((*in)[i]);
    result |= (byte & 0x7F) << shift;
    if (!(byte & 0x80)) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}
inline uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

inline uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
inline double BitsDouble(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

}  // namespace cohort::coding
