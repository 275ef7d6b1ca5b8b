#include "server/api/ingest_binary_decode.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "core/batch_format.h"
#include "core/coding.h"
#include "core/histogram.h"
#include "core/ids.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "core/utf8.h"
#include "server/api/ingest_checks.h"
#include "store/record_checks.h"

namespace cohort::api {
namespace {

using store::IngestBatch;
using store::KeyColumn;

constexpr uint32_t kNoColumn = UINT32_MAX;

// Reads the payload after the header into a columnar batch. Each method returns false at the
// first problem and leaves the message in error_.
class BinaryDecoder {
 public:
  BinaryDecoder(std::string_view payload, const ApiLimits& limits, IngestBatch* batch)
      : in_(payload), limits_(limits), batch_(*batch) {}

  Status Decode() {
    if (!ReadKeys()) return Error();
    uint64_t history = 0, system = 0, console = 0;
    if (!Count(&history, 2, "history count") || !CheckRows(history)) return Error();
    batch_.history_step.resize(history);
    batch_.history_time_ms.resize(history);
    for (size_t i = 0; i < history; ++i) {
      if (!ReadRow(true, i, &batch_.history_step[i], &batch_.history_time_ms[i])) return Error();
    }
    if (!Count(&system, 2, "system count") || !CheckRows(history + system)) return Error();
    batch_.system_time_ms.resize(system);
    prev_time_ = 0;
    prev_columns_.clear();
    for (size_t i = 0; i < system; ++i) {
      int64_t step = 0;
      if (!ReadRow(false, i, &step, &batch_.system_time_ms[i])) return Error();
    }
    if (!Count(&console, 3, "console count") || !CheckRows(history + system + console)) {
      return Error();
    }
    batch_.console.resize(console);
    prev_time_ = 0;
    for (size_t i = 0; i < console; ++i) {
      if (!ReadLine(i, &batch_.console[i])) return Error();
    }
    uint64_t histograms = 0;
    if (!Count(&histograms, 21, "histogram count") ||
        !CheckRows(history + system + console + histograms)) {
      return Error();
    }
    batch_.histograms.resize(histograms);
    prev_time_ = 0;
    for (size_t i = 0; i < histograms; ++i) {
      if (!ReadHistogram(i, &batch_.histograms[i])) return Error();
    }
    uint64_t media = 0;
    if (!Count(&media, 43, "media count") ||
        !CheckRows(history + system + console + histograms + media)) {
      return Error();
    }
    batch_.media.resize(media);
    prev_time_ = 0;
    for (size_t i = 0; i < media; ++i) {
      if (!ReadMedia(i, &batch_.media[i])) return Error();
    }
    if (!in_.empty()) {
      return Status::InvalidArgument("binary batch: " + std::to_string(in_.size()) +
                                     " unexpected bytes after the media rows");
    }
    return CheckKeyTypes(batch_);
  }

 private:
  Status Error() const {
    return too_large_ ? Status::PayloadTooLarge(error_) : Status::InvalidArgument(error_);
  }
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  bool Fail(const Status& s) { return Fail(std::string(s.message())); }
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
      if (key.size() > limits_.max_key_bytes) {
        return Fail(where + ": key longer than " + std::to_string(limits_.max_key_bytes) +
                    " bytes");
      }
      if (std::string_view why = InvalidKeyReason(key); !why.empty()) {
        // Name the key only when it is printable text.
        const bool show =
            !key.empty() && utf8::IsValid(key) && key.find('\0') == std::string_view::npos;
        return Fail(where + ": key " + (show ? "'" + std::string(key) + "' " : "") +
                    std::string(why));
      }
      if (!seen.insert(key).second) {
        return Fail(where + ": key '" + std::string(key) + "' appears twice in the key table");
      }
      keys_.push_back(key);
    }
    history_column_.assign(n, kNoColumn);
    system_column_.assign(n, kNoColumn);
    return true;
  }

  // The column of key `k` in the section, made at its first use.
  uint32_t ColumnOf(uint32_t k, bool history) {
    uint32_t& c = history ? history_column_[k] : system_column_[k];
    if (c == kNoColumn) {
      c = uint32_t(batch_.columns.size());
      KeyColumn& col = batch_.columns.emplace_back();
      col.system = !history;
      if (history) {
        col.key.assign(keys_[k]);
      } else {
        col.key.reserve(limits::kSystemKeyPrefix.size() + keys_[k].size());
        col.key.assign(limits::kSystemKeyPrefix);
        col.key.append(keys_[k]);
      }
    }
    return c;
  }

  bool ReadRow(bool history, size_t i, int64_t* step, int64_t* time_ms) {
    const char* section = history ? "history" : "system";
    auto where = [&] { return std::string(section) + "[" + std::to_string(i) + "]"; };
    if (in_.empty()) return Truncated(where());
    const uint8_t flags = uint8_t(in_[0]);
    in_.remove_prefix(1);
    const uint8_t allowed = history ? (batch::kRowHasStep | batch::kRowSameKeys)
                                    : batch::kRowSameKeys;
    if (flags & ~allowed) return Fail(where() + ": unknown row flags 0x" + Hex(flags));
    *step = store::kAssignStep;
    if (flags & batch::kRowHasStep) {
      uint64_t s = 0;
      if (!Varint(&s)) return Truncated(where());
      if (s > uint64_t(INT64_MAX)) return Fail(where() + ".step: must fit in 63 bits");
      *step = int64_t(s);
    }
    uint64_t dt = 0;
    if (!Varint(&dt)) return Truncated(where());
    prev_time_ = int64_t(uint64_t(prev_time_) + uint64_t(coding::UnZigZag(dt)));
    *time_ms = prev_time_;
    if (flags & batch::kRowSameKeys) {
      if (i == 0) return Fail(where() + ": repeats the keys of a previous row, but is the first");
    } else {
      uint64_t n = 0;
      if (!Varint(&n)) return Truncated(where());
      if (n > keys_.size()) {
        return Fail(where() + ": " + std::to_string(n) + " cells but only " +
                    std::to_string(keys_.size()) + " keys");
      }
      prev_columns_.resize(n);
      for (size_t k = 0; k < n; ++k) {
        uint64_t idx = 0;
        if (!Varint(&idx)) return Truncated(where());
        if (idx >= keys_.size()) {
          return Fail(where() + ": key index " + std::to_string(idx) + " out of range (" +
                      std::to_string(keys_.size()) + " keys)");
        }
        const uint32_t c = ColumnOf(uint32_t(idx), history);
        const std::vector<uint32_t>& rows = batch_.columns[c].rows;
        // Not yet given a value in this row: the column's rows are ascending.
        if (!rows.empty() && rows.back() == uint32_t(i)) {
          return Fail(where() + ": key '" + std::string(keys_[idx]) +
                      "' appears twice in the row");
        }
        // Reserve the row now so a repeat later in this key list is seen; the value follows.
        batch_.columns[c].rows.push_back(uint32_t(i));
        prev_columns_[k] = c;
      }
    }
    const size_t n = prev_columns_.size();
    if (in_.size() / 8 < n) return Truncated(where() + " values");
    const char* p = in_.data();
    if (flags & batch::kRowSameKeys) {
      for (size_t k = 0; k < n; ++k) {
        KeyColumn& col = batch_.columns[prev_columns_[k]];
        col.rows.push_back(uint32_t(i));
        col.values.push_back(coding::BitsDouble(coding::DecodeFixed64(p)));
        p += 8;
      }
    } else {
      for (size_t k = 0; k < n; ++k) {
        batch_.columns[prev_columns_[k]].values.push_back(
            coding::BitsDouble(coding::DecodeFixed64(p)));
        p += 8;
      }
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
    if (!utf8::IsValid(text)) return Fail(where + ".text: not valid UTF-8");
    line->text.assign(text);
    return true;
  }

  bool Double(double* d) {
    if (in_.size() < 8) return false;
    *d = coding::BitsDouble(coding::DecodeFixed64(in_.data()));
    in_.remove_prefix(8);
    return true;
  }

  bool ReadHistogram(size_t i, store::HistogramPoint* h) {
    const std::string where = "histograms[" + std::to_string(i) + "]";
    if (in_.empty()) return Truncated(where);
    const uint8_t flags = uint8_t(in_[0]);
    in_.remove_prefix(1);
    if (flags & ~(batch::kHistogramHasStep | batch::kHistogramEdges)) {
      return Fail(where + ": unknown flags 0x" + Hex(flags));
    }
    if (!(flags & batch::kHistogramHasStep)) return Fail(where + ": a histogram needs a step");
    uint64_t step = 0, dt = 0, k = 0, n = 0;
    if (!Varint(&step, where) || !Varint(&dt, where) || !Varint(&k, where)) return false;
    if (step > uint64_t(INT64_MAX)) return Fail(where + ".step: must fit in 63 bits");
    h->step = int64_t(step);
    prev_time_ = int64_t(uint64_t(prev_time_) + uint64_t(coding::UnZigZag(dt)));
    h->time_ms = prev_time_;
    if (k >= keys_.size()) {
      return Fail(where + ": key index " + std::to_string(k) + " out of range (" +
                  std::to_string(keys_.size()) + " keys)");
    }
    h->key.assign(keys_[k]);
    if (!Varint(&n, where)) return false;
    // Before n values are read (and allocated); CheckHistogramPoint says it again for JSON.
    if (std::string why = histogram::BinCountReason(n); !why.empty()) {
      return Fail(where + " (key '" + h->key + "'): " + why);
    }
    Histogram& v = h->value;
    const bool edges = flags & batch::kHistogramEdges;
    if (in_.size() / 8 < (edges ? 2 * n + 1 : n + 2)) return Truncated(where);
    if (edges) {
      v.edges.resize(n + 1);
      for (double& e : v.edges) Double(&e);
    } else {
      Double(&v.lo);
      Double(&v.hi);
    }
    v.counts.resize(n);
    for (double& c : v.counts) Double(&c);
    if (Status s = store::CheckHistogramPoint(where, *h); !s.ok()) return Fail(s);
    return true;
  }

  bool String(std::string* s, size_t max, const std::string& where) {
    uint64_t len = 0;
    if (!Varint(&len, where)) return false;
    if (len > in_.size()) return Truncated(where);
    if (len > max) {
      return Fail(where + ": longer than " + std::to_string(max) + " bytes");
    }
    s->assign(in_.substr(0, len));
    in_.remove_prefix(len);
    return true;
  }

  bool ReadMedia(size_t i, store::MediaPoint* m) {
    const std::string where = "media[" + std::to_string(i) + "]";
    if (in_.empty()) return Truncated(where);
    const uint8_t flags = uint8_t(in_[0]);
    in_.remove_prefix(1);
    if (flags & ~batch::kMediaCellBytes) return Fail(where + ": unknown flags 0x" + Hex(flags));
    uint64_t step = 0, dt = 0, k = 0, index = 0, size = 0, width = 0, height = 0, duration = 0,
             cell_bytes = 0;
    if (!Varint(&step, where) || !Varint(&dt, where) || !Varint(&k, where)) return false;
    if (step > uint64_t(INT64_MAX)) return Fail(where + ".step: must fit in 63 bits");
    prev_time_ = int64_t(uint64_t(prev_time_) + uint64_t(coding::UnZigZag(dt)));
    if (k >= keys_.size()) {
      return Fail(where + ": key index " + std::to_string(k) + " out of range (" +
                  std::to_string(keys_.size()) + " keys)");
    }
    if (in_.empty()) return Truncated(where);
    const uint8_t type = uint8_t(in_[0]);
    in_.remove_prefix(1);
    const std::string_view type_name = batch::MediaTypeName(batch::MediaType(type));
    if (type_name.empty()) return Fail(where + ": unknown media type " + std::to_string(type));
    if (!Varint(&index, where)) return false;
    if (in_.size() < 32) return Truncated(where);
    static constexpr char kDigits[] = "0123456789abcdef";
    m->sha256.resize(64);
    for (size_t b = 0; b < 32; ++b) {
      m->sha256[2 * b] = kDigits[uint8_t(in_[b]) >> 4];
      m->sha256[2 * b + 1] = kDigits[uint8_t(in_[b]) & 15];
    }
    in_.remove_prefix(32);
    if (!Varint(&size, where)) return false;
    if (!String(&m->mime, limits::kMaxMediaMimeBytes, where + ".mime")) return false;
    if (!Varint(&width, where) || !Varint(&height, where) || !Varint(&duration, where)) {
      return false;
    }
    if (!String(&m->caption, limits::kMaxMediaCaptionBytes, where + ".caption")) return false;
    if ((flags & batch::kMediaCellBytes) && !Varint(&cell_bytes, where)) return false;
    constexpr uint64_t kMax = uint64_t(INT64_MAX);
    if (index > kMax || size > kMax || width > kMax || height > kMax || duration > kMax ||
        cell_bytes > kMax) {
      return Fail(where + ": a number does not fit in 63 bits");
    }
    m->key.assign(keys_[k]);
    m->step = int64_t(step);
    m->time_ms = prev_time_;
    m->index = int64_t(index);
    m->type.assign(type_name);
    m->size = int64_t(size);
    m->width = int64_t(width);
    m->height = int64_t(height);
    m->duration_ms = int64_t(duration);
    m->cell_bytes = int64_t(cell_bytes);
    if (Status s = store::CheckMediaPoint(where, *m); !s.ok()) return Fail(s);
    return true;
  }

  static std::string Hex(uint8_t b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    return {kDigits[b >> 4], kDigits[b & 15]};
  }

  std::string_view in_;
  const ApiLimits& limits_;
  IngestBatch& batch_;
  std::vector<std::string_view> keys_;       // into the body
  std::vector<uint32_t> history_column_;     // per key: its history column (kNoColumn: none)
  std::vector<uint32_t> system_column_;      // per key: its system column
  std::vector<uint32_t> prev_columns_;       // the columns of the previous row of the section
  int64_t prev_time_ = 0;
  bool too_large_ = false;
  std::string error_;
};

// `value` without the blanks (spaces, tabs) around it.
std::string_view TrimBlanks(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

}  // namespace

Result<int64_t> ParseBatchSeqHeader(std::string_view value) {
  const std::string name(limits::kBatchSeqHeader);
  value = TrimBlanks(value);
  if (value.empty()) {
    return Status::InvalidArgument(name + " header: required with Content-Type " +
                                   std::string(limits::kBatchMediaType));
  }
  uint64_t seq = 0;
  for (char c : value) {
    if (c < '0' || c > '9' || value.size() > 19) {
      return Status::InvalidArgument(name + " header: expected a decimal integer in 1..2^63-1");
    }
    seq = seq * 10 + uint64_t(c - '0');
  }
  if (seq == 0 || seq > uint64_t(INT64_MAX)) {
    return Status::InvalidArgument(name + " header: must be > 0 (and fit in 63 bits)");
  }
  return int64_t(seq);
}

Result<std::string> ParseBatchOrderedHeader(std::string_view value) {
  value = TrimBlanks(value);
  if (!value.empty() && !ids::IsValidId(value)) {
    return Status::InvalidArgument(
        std::string(limits::kBatchOrderedHeader) + " header: expected a stream id of 1 to " +
        std::to_string(limits::kMaxIdBytes) + " letters, digits, '.', '_' or '-'");
  }
  return std::string(value);
}

bool IsBinaryBatchContentType(std::string_view content_type) {
  std::string_view type = TrimBlanks(content_type.substr(0, content_type.find(';')));
  if (type.size() != limits::kBatchMediaType.size()) return false;
  for (size_t i = 0; i < type.size(); ++i) {
    char c = type[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != limits::kBatchMediaType[i]) return false;
  }
  return true;
}

Result<store::IngestBatch> DecodeBinaryIngestBatch(std::string_view body, int64_t seq,
                                                             const ApiLimits& limits) {
  if (Status s = batch::CheckHeader(body); !s.ok()) {
    return s.code() == StatusCode::kFailedPrecondition ? Status::InvalidArgument(s.message()) : s;
  }
  IngestBatch batch;
  batch.seq = seq;
  BinaryDecoder d(body.substr(batch::kHeaderBytes), limits, &batch);
  COHORT_RETURN_IF_ERROR(d.Decode());
  return batch;
}

}  // namespace cohort::api
