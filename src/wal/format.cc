#include "wal/format.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::wal {
namespace {

constexpr size_t kSegmentDigits = 20;
constexpr std::string_view kSegmentSuffix = ".wal";

}  // namespace

std::string Position::ToString() const {
  return std::to_string(segment) + ":" + std::to_string(offset);
}

std::string Damage::ToString() const {
  return "segment " + std::to_string(position.segment) + " offset " +
         std::to_string(position.offset) + ": " + std::to_string(bytes) + " bytes skipped (" +
         reason + ")";
}

std::string SegmentFileName(uint64_t segment) {
  char buf[kSegmentDigits + 1];
  std::snprintf(buf, sizeof(buf), "%020llu", static_cast<unsigned long long>(segment));
  return std::string(buf) + std::string(kSegmentSuffix);
}

bool ParseSegmentFileName(std::string_view name, uint64_t* segment) {
  if (name.size() != kSegmentDigits + kSegmentSuffix.size()) return false;
  if (name.substr(kSegmentDigits) != kSegmentSuffix) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < kSegmentDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t digit = uint64_t(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;  // overflow
    v = v * 10 + digit;
  }
  *segment = v;
  return true;
}

std::string EncodeSegmentHeader(uint64_t segment) {
  std::string h(kSegmentMagic);
  coding::PutFixed32(&h, kFormatVersion);
  coding::PutFixed64(&h, segment);
  coding::PutFixed32(&h, crc32c::Value(h));
  assert(h.size() == kSegmentHeaderSize);
  return h;
}

Status CheckSegmentHeader(std::string_view header, uint64_t expected_segment) {
  if (header.size() < kSegmentHeaderSize) {
    return Status::Corruption("segment header is " + std::to_string(header.size()) +
                              " bytes, expected " + std::to_string(kSegmentHeaderSize));
  }
  if (header.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
    return Status::Corruption("not a WAL segment (bad magic)");
  }
  uint32_t stored = coding::DecodeFixed32(header.data() + 20);
  if (crc32c::Value(header.data(), 20) != stored) {
    return Status::Corruption("segment header checksum mismatch");
  }
  uint32_t version = coding::DecodeFixed32(header.data() + 8);
  if (version != kFormatVersion) {
    return Status::FailedPrecondition("WAL segment format version " + std::to_string(version) +
                                      " is not supported (this build reads version " +
                                      std::to_string(kFormatVersion) + ")");
  }
  uint64_t segment = coding::DecodeFixed64(header.data() + 12);
  if (segment != expected_segment) {
    return Status::Corruption("segment header names segment " + std::to_string(segment) +
                              ", file name says " + std::to_string(expected_segment));
  }
  return Status::Ok();
}

uint32_t FragmentChecksum(const char* fragment_from_length, uint64_t data_length) {
  return crc32c::Value(fragment_from_length, 5 + data_length);
}

uint64_t EncodeRecord(std::string* out, uint64_t offset, std::string_view payload) {
  assert(offset >= kSegmentHeaderSize);
  assert(payload.size() <= kMaxRecordSize);
  bool first = true;
  do {
    uint64_t left_in_block = kBlockSize - offset % kBlockSize;
    if (left_in_block < kFragmentHeaderSize) {
      out->append(left_in_block, '\0');
      offset += left_in_block;
      left_in_block = kBlockSize;
    }
    uint64_t n = std::min<uint64_t>(payload.size(), left_in_block - kFragmentHeaderSize);
    bool last = n == payload.size();
    FragmentType type = first && last ? FragmentType::kFull
                        : first       ? FragmentType::kFirst
                        : last        ? FragmentType::kLast
                                      : FragmentType::kMiddle;
    size_t at = out->size();
    coding::PutFixed32(out, 0);  // checksum, filled below
    coding::PutFixed32(out, uint32_t(n));
    out->push_back(char(type));
    out->append(payload.data(), n);
    uint32_t crc = FragmentChecksum(out->data() + at + 4, n);
    for (int i = 0; i < 4; ++i) (*out)[at + i] = char(crc >> (8 * i));
    offset += kFragmentHeaderSize + n;
    payload.remove_prefix(n);
    first = false;
  } while (!payload.empty());
  return offset;
}

}  // namespace cohort::wal
