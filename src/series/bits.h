// Bit-level writer and reader for the chunk payload (docs/formats.md, "Series chunks"): bits are
// packed least-significant first into bytes, so the first bit written is bit 0 of byte 0.
// Internal to src/series. Both classes are single-threaded values.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

// Forces inlining of the few functions on the per-value decoding path.
#define COHORT_SERIES_INLINE __attribute__((always_inline)) inline

namespace cohort::series::internal {

// Writes bits into a caller-sized buffer of at least ceil(bits / 8) bytes for the bits it will
// write (it stores whole 8-byte words only once all their bits are written). Finish() writes the
// last partial byte.
class BitWriter {
 public:
  explicit BitWriter(char* dst) : dst_(dst) {}

  // Appends the low `bits` bits of `v`; 0 <= bits <= 64 and `v` must have no higher bits set.
  void Write(uint64_t v, int bits) {
    acc_ |= v << fill_;  // fill_ < 64 always
    int total = fill_ + bits;
    if (total >= 64) {
      StoreWord(acc_);
      acc_ = fill_ == 0 ? 0 : v >> (64 - fill_);
      total -= 64;
    }
    fill_ = total;
  }

  // Writes the buffered bits, zero-padding the last byte; returns the end of what was written.
  char* Finish() {
    for (int i = 0; i < fill_; i += 8) *dst_++ = char(acc_ >> i);
    acc_ = 0;
    fill_ = 0;
    return dst_;
  }

 private:
  void StoreWord(uint64_t w) {
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    std::memcpy(dst_, &w, 8);
    dst_ += 8;
  }

  char* dst_;
  uint64_t acc_ = 0;  // pending bits, the oldest in bit 0
  int fill_ = 0;      // number of pending bits, < 64
};

// Counts the bits a BitWriter would write; lets an encoder price a coding without writing it.
class BitCounter {
 public:
  void Write(uint64_t /*v*/, int bits) { bits_ += uint64_t(bits); }
  uint64_t bits() const { return bits_; }

 private:
  uint64_t bits_ = 0;
};

// Reads bits from a byte range it never reads outside of. Reading past the end yields zero bits
// and sets overrun(); decoders check it once at the end rather than after every read.
class BitReader {
 public:
  BitReader(const char* data, size_t size)
      : next_(reinterpret_cast<const uint8_t*>(data)), end_(next_ + size) {}

  // The next `bits` (0..56) bits without consuming them; bits past the end read as zero.
  COHORT_SERIES_INLINE uint64_t Peek(int bits) {
    if (count_ < bits) Refill();
    return buf_ & Mask(bits);
  }
  // Consumes `bits` (0..56) bits.
  COHORT_SERIES_INLINE void Consume(int bits) {
    if (count_ < bits) {
      Refill();
      if (count_ < bits) {
        overrun_ = true;
        buf_ = 0;
        count_ = 0;
        return;
      }
    }
    buf_ >>= bits;
    count_ -= bits;
  }
  // Reads `bits` (0..56) bits.
  COHORT_SERIES_INLINE uint64_t Read(int bits) {
    uint64_t v = Peek(bits);
    Consume(bits);
    return overrun_ ? 0 : v;
  }
  // Reads `bits` (0..64) bits.
  uint64_t ReadLong(int bits) {
    if (bits <= 56) return Read(bits);
    uint64_t lo = Read(32);
    return lo | Read(bits - 32) << 32;
  }

  bool overrun() const { return overrun_; }
  // True when fewer than 8 bits remain and they are all zero: the stream ended exactly where its
  // writer's Finish() left it.
  bool AtCleanEnd() {
    Refill();
    return !overrun_ && next_ == end_ && count_ < 8 && (buf_ & Mask(count_)) == 0;
  }

 private:
  static uint64_t Mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

  // Tops the buffer up to at least 56 valid bits, or to everything that is left. Bits above
  // count_ are either zero or the stream's own next bits, so OR-ing a word in is idempotent.
  COHORT_SERIES_INLINE void Refill() {
    if (end_ - next_ >= 8) [[likely]] {
      uint64_t w;
      std::memcpy(&w, next_, 8);
      if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
      buf_ |= w << count_;
      next_ += (63 - count_) >> 3;
      count_ |= 56;
    } else {
      RefillTail();
    }
  }
  // The last bytes, one at a time.
  void RefillTail() {
    while (count_ < 56 && next_ < end_) {
      buf_ |= uint64_t(*next_++) << count_;
      count_ += 8;
    }
  }

  const uint8_t* next_;
  const uint8_t* end_;
  uint64_t buf_ = 0;  // valid bits in [0, count_)
  int count_ = 0;
  bool overrun_ = false;
};

}  // namespace cohort::series::internal
