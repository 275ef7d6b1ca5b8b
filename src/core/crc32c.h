// CRC-32C (Castagnoli), the checksum of every on-disk and on-wire frame (WAL records, chunks).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cohort::crc32c {

// Extends `crc` (the CRC of some earlier bytes, 0 for none) with `n` bytes at `data`.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// The table-driven implementation, which Extend uses where the CPU has no CRC-32C instruction
// (x86-64 without SSE 4.2, other architectures). Same results; for tests.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);

}  // namespace cohort::crc32c
