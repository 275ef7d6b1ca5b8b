// The ack file of a log directory: the position up to which the server has acknowledged the
// log, as 32 checksummed bytes (docs/formats.md), replaced atomically (write ACK.tmp, fsync,
// rename over ACK, fsync the directory), so that a crash leaves the old or the new position and
// damage is detected rather than believed.
//
// Pure functions over a FileSystem; thread-safe as long as one caller at a time writes a given
// directory's ack file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "wal/file.h"
#include "wal/format.h"

namespace cohort::wal {

inline constexpr std::string_view kAckFileName = "ACK";
inline constexpr std::string_view kAckMagic = "COHRTACK";  // 8 bytes
inline constexpr uint64_t kAckFileSize = 32;  // magic 8, version 4, segment 8, offset 8, crc 4

std::string EncodeAck(Position acknowledged);
// kCorruption for a wrong size, magic or checksum; kFailedPrecondition for an unsupported
// version.
Result<Position> DecodeAck(std::string_view contents);

Status WriteAckFile(FileSystem* fs, const std::string& dir, Position acknowledged);
// nullopt when `dir` has no ack file; kCorruption when it cannot be trusted.
Result<std::optional<Position>> ReadAckFile(FileSystem* fs, const std::string& dir);

}  // namespace cohort::wal
