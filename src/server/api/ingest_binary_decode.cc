#include "server/api/ingest_binary_decode.h"

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::api {
namespace {

// Row flags (docs/formats.md, "Binary ingest batch").
constexpr uint8_t kHasStep = 1;   // history rows: a step follows (else the server assigns it)
constexpr uint8_t kSameKeys = 2;  // the row's keys are the previous row's (of its section)

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF),
// as the JSON parser requires of strings.
bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (size_t(end - p) < n || p[1] < lo || p[1] > hi) return false;
    for (size_t k = 2; k < n; ++k) {
      if (p[k] < 0x80 || p[k] > 0xBF) return false;
    }
    p += n;
  }
  return true;
}

// Reads the payload after the header. Each method returns false at the first problem and leaves
// the message in error_.
class BinaryDecoder {
 public:
  BinaryDecoder(std::string_view payload, const ApiLimits& limits)
      : in_(payload), limits_(limits) {}

  Result<store::IngestBatch> Decode() {
    store::IngestBatch batch;
    uint64_t seq = 0;
    if (!Varint(&seq, "seq")) return Error();
    if (seq == 0 || seq > uint64_t(INT64_MAX)) {
      return Status::InvalidArgument("seq: must be > 0 (and fit in 63 bits)");
    }
    batch.seq = int64_t(seq);
    if (!ReadKeys()) return Error();

    uint64_t history = 0, system = 0, console = 0;
    if (!Count(&history, 2, "history count")) return Error();
    if (!CheckRows(history)) return Error();
    batch.rows.resize(history);
    for (size_t i = 0; i < history; ++i) {
      if (!ReadRow(true, i, &batch.rows[i].step, &batch.rows[i].time_ms, &batch.rows[i].values)) {
        return Error();
      }
    }
    if (!Count(&system, 2, "system count")) return Error();
    if (!CheckRows(history + system)) return Error();
    batch.system.resize(system);
    prev_time_ = 0;
    prev_keys_.clear();
    for (size_t i = 0; i < system; ++i) {
      int64_t step;
      if (!ReadRow(false, i, &step, &batch.system[i].time_ms, &batch.system[i].values)) {
        return Error();
      }
    }
    if (!Count(&console, 3, "console count")) return Error();
    if (!CheckRows(history + system + console)) return Error();
    batch.console.resize(console);
    prev_time_ = 0;
    for (size_t i = 0; i < console; ++i) {
      if (!ReadLine(i, &batch.console[i])) return Error();
    }
    if (!in_.empty()) {
      return Status::InvalidArgument("binary batch: " + std::to_string(in_.size()) +
                                     " unexpected bytes after the console lines");
    }
    return batch;
  }

 private:
  Status Error() const {
    return too_large_ ? Status::PayloadTooLarge(error_) : Status::InvalidArgument(error_);
  }
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  bool Truncated(std::string_view where) {
    return Fail("binary batch: truncated in " + std::string(where));
  }

  // Reads a varint; false when truncated (the caller names the place).
  bool Varint(uint64_t* v) {
    if (!in_.empty() && !(uint8_t(in_[0]) & 0x80)) {  // fast path: one byte
      *v = uint8_t(in_[0]);
      in_.remove_prefix(1);
      return true;
    }
    return coding::GetVarint64(&in_, v);
  }
  bool Varint(uint64_t* v, std::string_view where) { return Varint(v) || Truncated(where); }

  // A count of items each at least `min_bytes` long: more than the bytes left is malformed
  // (and must not size an allocation).
  bool Count(uint64_t* n, size_t min_bytes, std::string_view where) {
    if (!Varint(n, where)) return false;
    if (*n > in_.size() / min_bytes) {
      return Fail("binary batch: " + std::string(where) + " " + std::to_string(*n) +
                  " exceeds what the remaining " + std::to_string(in_.size()) + " bytes can hold");
    }
    return true;
  }

  bool CheckRows(uint64_t rows) {
    if (rows <= limits_.max_rows_per_batch) return true;
    too_large_ = true;
    return Fail("batch has more than " + std::to_string(limits_.max_rows_per_batch) + " rows");
  }

  bool ReadKeys() {
    uint64_t n = 0;
    if (!Count(&n, 2, "key count")) return false;
    if (n > limits_.max_keys_per_batch) {
      too_large_ = true;
      return Fail("batch has more than " + std::to_string(limits_.max_keys_per_batch) +
                  " distinct keys (--max-keys-per-batch)");
    }
    keys_.reserve(n);
    std::unordered_set<std::string_view> seen;
    seen.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      std::string where = "keys[" + std::to_string(i) + "]";
      uint64_t len = 0;
      if (!Varint(&len, where)) return false;
      if (len > in_.size()) return Truncated(where);
      std::string_view key = in_.substr(0, len);
      in_.remove_prefix(len);
      if (key.empty()) return Fail(where + ": empty key");
      if (key.size() > limits_.max_key_bytes) {
        return Fail(where + ": key longer than " + std::to_string(limits_.max_key_bytes) +
                    " bytes");
      }
      if (!IsValidUtf8(key)) return Fail(where + ": key is not valid UTF-8");
      if (!seen.insert(key).second) {
        return Fail(where + ": key '" + std::string(key) + "' appears twice in the key table");
      }
      keys_.emplace_back(key);
    }
    last_row_.assign(n, SIZE_MAX);
    return true;
  }

  bool ReadRow(bool history, size_t i, int64_t* step, int64_t* time_ms,
               std::vector<std::pair<std::string, double>>* values) {
    const char* section = history ? "history" : "system";
    auto where = [&] { return std::string(section) + "[" + std::to_string(i) + "]"; };
    if (in_.empty()) return Truncated(where());
    const uint8_t flags = uint8_t(in_[0]);
    in_.remove_prefix(1);
    const uint8_t allowed = history ? (kHasStep | kSameKeys) : kSameKeys;
    if (flags & ~allowed) {
      return Fail(where() + ": unknown row flags 0x" + Hex(flags));
    }
    *step = -1;
    if (flags & kHasStep) {
      uint64_t s = 0;
      if (!Varint(&s)) return Truncated(where());
      if (s > uint64_t(INT64_MAX)) return Fail(where() + ".step: must fit in 63 bits");
      *step = int64_t(s);
    }
    uint64_t dt = 0;
    if (!Varint(&dt)) return Truncated(where());
    prev_time_ = int64_t(uint64_t(prev_time_) + uint64_t(coding::UnZigZag(dt)));
    *time_ms = prev_time_;
    if (flags & kSameKeys) {
      if (i == 0) return Fail(where() + ": repeats the keys of a previous row, but is the first");
    } else {
      uint64_t n = 0;
      if (!Varint(&n)) return Truncated(where());
      if (n > keys_.size()) {
        return Fail(where() + ": " + std::to_string(n) + " cells but only " +
                    std::to_string(keys_.size()) + " keys");
      }
      prev_keys_.resize(n);
      ++row_id_;
      for (size_t k = 0; k < n; ++k) {
        uint64_t idx = 0;
        if (!Varint(&idx)) return Truncated(where());
        if (idx >= keys_.size()) {
          return Fail(where() + ": key index " + std::to_string(idx) + " out of range (" +
                      std::to_string(keys_.size()) + " keys)");
        }
        if (last_row_[idx] == row_id_) {
          return Fail(where() + ": key '" + keys_[idx] + "' appears twice in the row");
        }
        last_row_[idx] = row_id_;
        prev_keys_[k] = uint32_t(idx);
      }
    }
    const size_t n = prev_keys_.size();
    if (in_.size() / 8 < n) return Truncated(where() + " values");
    values->reserve(n);
    const char* p = in_.data();
    for (size_t k = 0; k < n; ++k) {
      values->emplace_back(keys_[prev_keys_[k]], coding::BitsDouble(coding::DecodeFixed64(p)));
      p += 8;
    }
    in_.remove_prefix(n * 8);
    return true;
  }

  bool ReadLine(size_t i, store::ConsoleLine* line) {
    std::string where = "console[" + std::to_string(i) + "]";
    uint64_t dt = 0;
    if (!Varint(&dt, where)) return false;
    prev_time_ = int64_t(uint64_t(prev_time_) + uint64_t(coding::UnZigZag(dt)));
    line->time_ms = prev_time_;
    if (in_.empty()) return Truncated(where);
    const uint8_t stream = uint8_t(in_[0]);
    in_.remove_prefix(1);
    if (stream > 1) return Fail(where + ".stream: " + std::to_string(stream) + " is not 0 or 1");
    line->stream = stream ? "stderr" : "stdout";
    uint64_t len = 0;
    if (!Varint(&len, where)) return false;
    if (len > in_.size()) return Truncated(where + ".text");
    if (len > limits_.max_console_line_bytes) {
      return Fail(where + ".text: longer than " + std::to_string(limits_.max_console_line_bytes) +
                  " bytes");
    }
    std::string_view text = in_.substr(0, len);
    in_.remove_prefix(len);
    if (!IsValidUtf8(text)) return Fail(where + ".text: not valid UTF-8");
    line->text.assign(text);
    return true;
  }

  static std::string Hex(uint8_t b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    return {kDigits[b >> 4], kDigits[b & 15]};
  }

  std::string_view in_;
  const ApiLimits& limits_;
  std::vector<std::string> keys_;
  std::vector<size_t> last_row_;  // per key: the row that named it last (duplicate check)
  size_t row_id_ = 0;
  std::vector<uint32_t> prev_keys_;  // the key indices of the previous row of the section
  int64_t prev_time_ = 0;
  bool too_large_ = false;
  std::string error_;
};

}  // namespace

std::optional<uint8_t> BinaryBatchVersion(std::string_view body) {
  if (body.size() < kBinaryBatchMagic.size() + 1 || !body.starts_with(kBinaryBatchMagic)) {
    return std::nullopt;
  }
  return uint8_t(body[kBinaryBatchMagic.size()]);
}

bool IsBinaryBatchContentType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  if (type.size() != kBinaryBatchContentType.size()) return false;
  for (size_t i = 0; i < type.size(); ++i) {
    char c = type[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != kBinaryBatchContentType[i]) return false;
  }
  return true;
}

Result<store::IngestBatch> DecodeBinaryIngestBatch(std::string_view body, const ApiLimits& limits) {
  if (body.size() < kBinaryBatchHeaderBytes) {
    if (!body.starts_with(kBinaryBatchMagic.substr(0, std::min(body.size(), size_t(4))))) {
      return Status::InvalidArgument("binary batch: does not start with \"CBAT\"");
    }
    return Status::InvalidArgument("binary batch: truncated header (" +
                                   std::to_string(body.size()) + " of " +
                                   std::to_string(kBinaryBatchHeaderBytes) + " bytes)");
  }
  if (!body.starts_with(kBinaryBatchMagic)) {
    return Status::InvalidArgument("binary batch: does not start with \"CBAT\"");
  }
  const uint8_t version = uint8_t(body[4]);
  if (version != kBinaryBatchVersion) {
    return Status::InvalidArgument("binary batch: unknown version " + std::to_string(version) +
                                   " (this server reads version " +
                                   std::to_string(kBinaryBatchVersion) + ")");
  }
  if (body[5] != 0 || body[6] != 0 || body[7] != 0) {
    return Status::InvalidArgument("binary batch: unknown header flags (bytes 5-7 must be 0)");
  }
  const std::string_view payload = body.substr(kBinaryBatchHeaderBytes);
  const uint32_t want = coding::DecodeFixed32(body.data() + 8);
  const uint32_t got = crc32c::Value(payload);
  if (want != got) {
    return Status::InvalidArgument("binary batch: bad checksum (CRC-32C of the " +
                                   std::to_string(payload.size()) +
                                   " payload bytes does not match the header)");
  }
  BinaryDecoder d(payload, limits);
  return d.Decode();
}

}  // namespace cohort::api
