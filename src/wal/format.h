// On-disk format of the write-ahead log (docs/formats.md, "Write-ahead log (agent)"): segment
// names and headers, block-aligned record framing, and the value types shared by the writer,
// the reader and the log (Position, Record, Damage).
//
// A segment file is a 24-byte header followed by records. The file is cut into 32 KiB blocks
// (by absolute file offset; the header sits at the start of block 0). A record is written as one
// or more fragments, each [crc32c(4) | length(4) | type(1) | data(length)], and a fragment never
// crosses a block boundary; when fewer than 9 bytes are left in a block they are zero padding.
// A reader that meets a damaged fragment therefore resynchronises at the next block boundary.
//
// Everything here is a pure function or a plain value; thread-safe.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::wal {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr std::string_view kSegmentMagic = "COHORTWL";  // 8 bytes
inline constexpr uint64_t kSegmentHeaderSize = 24;  // magic 8, version 4, segment 8, crc 4
inline constexpr uint64_t kBlockSize = 32 * 1024;
inline constexpr uint64_t kFragmentHeaderSize = 9;  // crc 4, length 4, type 1
// The largest payload one record may carry. Bounds the memory a reader needs on any input.
inline constexpr uint64_t kMaxRecordSize = 64ull << 20;
// Segments are numbered from 1 up; a Position with segment 0 is "before every record".
inline constexpr uint64_t kFirstSegment = 1;

enum class FragmentType : uint8_t {
  kFull = 1,    // a whole record
  kFirst = 2,   // the first fragment of a record that spans blocks
  kMiddle = 3,  // a fragment that is neither first nor last
  kLast = 4,    // the last fragment
};

// A place in the log: a byte offset inside a numbered segment. Positions order the log: every
// record of segment s comes before every record of segment s + 1. The position of a record is
// where its bytes begin (including any block padding in front of its first fragment); its
// `next` position, where the following record begins, is what callers acknowledge.
struct Position {
  uint64_t segment = 0;
  uint64_t offset = 0;

  friend auto operator<=>(const Position&, const Position&) = default;
  // "segment:offset".
  std::string ToString() const;
};

// One record read back from the log.
struct Record {
  Position position;  // where the record begins
  Position next;      // just past it: MarkAcknowledged(next) acknowledges it
  std::string payload;
};

// Bytes a reader skipped because they could not be read as records.
struct Damage {
  Position position;  // first byte skipped
  uint64_t bytes = 0;
  std::string reason;

  // "segment 3 offset 4096: 28672 bytes skipped (checksum mismatch)".
  std::string ToString() const;
};

// "00000000000000000042.wal": 20 zero-padded decimal digits, so that names sort like numbers.
std::string SegmentFileName(uint64_t segment);
// Parses a name made by SegmentFileName; false for anything else.
bool ParseSegmentFileName(std::string_view name, uint64_t* segment);

std::string EncodeSegmentHeader(uint64_t segment);
// Checks the first kSegmentHeaderSize bytes of a segment. kCorruption for a short header, bad
// magic, bad checksum or a segment number other than `expected_segment`; kFailedPrecondition
// for a well-formed header of an unsupported format version.
Status CheckSegmentHeader(std::string_view header, uint64_t expected_segment);

// Appends to `out` the bytes of one record that starts at file offset `offset` of its segment
// (padding up to the next block if needed, then its fragments) and returns the offset just past
// it. `offset` must be >= kSegmentHeaderSize and payload.size() <= kMaxRecordSize.
uint64_t EncodeRecord(std::string* out, uint64_t offset, std::string_view payload);

// The checksum stored in a fragment: CRC-32C of its length, type and data bytes, i.e. of the
// fragment from byte 4 to its end.
uint32_t FragmentChecksum(const char* fragment_from_length, uint64_t data_length);

}  // namespace cohort::wal
