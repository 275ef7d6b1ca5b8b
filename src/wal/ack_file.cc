#include "wal/ack_file.h"

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::wal {

std::string EncodeAck(Position acknowledged) {
  std::string out(kAckMagic);
  coding::PutFixed32(&out, kFormatVersion);
  coding::PutFixed64(&out, acknowledged.segment);
  coding::PutFixed64(&out, acknowledged.offset);
  coding::PutFixed32(&out, crc32c::Value(out));
  return out;
}

Result<Position> DecodeAck(std::string_view contents) {
  if (contents.size() != kAckFileSize) {
    return Status::Corruption("ack file is " + std::to_string(contents.size()) +
                              " bytes, expected " + std::to_string(kAckFileSize));
  }
  if (contents.substr(0, kAckMagic.size()) != kAckMagic) {
    return Status::Corruption("ack file has a bad magic");
  }
  const char* p = contents.data();
  if (crc32c::Value(p, kAckFileSize - 4) != coding::DecodeFixed32(p + kAckFileSize - 4)) {
    return Status::Corruption("ack file checksum mismatch");
  }
  uint32_t version = coding::DecodeFixed32(p + 8);
  if (version != kFormatVersion) {
    return Status::FailedPrecondition("ack file format version " + std::to_string(version) +
                                      " is not supported");
  }
  return Position{coding::DecodeFixed64(p + 12), coding::DecodeFixed64(p + 20)};
}

Status WriteAckFile(FileSystem* fs, const std::string& dir, Position acknowledged) {
  return WriteFileAtomically(fs, JoinPath(dir, kAckFileName), EncodeAck(acknowledged));
}

Result<std::optional<Position>> ReadAckFile(FileSystem* fs, const std::string& dir) {
  // Read one byte more than a valid file so that an overlong one is seen as such.
  Result<std::string> contents =
      ReadFileToString(fs, JoinPath(dir, kAckFileName), kAckFileSize + 1);
  if (contents.status().code() == StatusCode::kNotFound) return std::optional<Position>();
  if (!contents.ok()) {
    if (contents.status().code() == StatusCode::kCorruption) {
      return Status::Corruption("ack file is too large");
    }
    return contents.status();
  }
  COHORT_ASSIGN_OR_RETURN(Position p, DecodeAck(*contents));
  return std::optional<Position>(p);
}

}  // namespace cohort::wal
