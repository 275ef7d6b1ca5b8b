#include "core/batch_format.h"

#include <algorithm>
#include <unordered_map>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/histogram.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "core/utf8.h"

namespace cohort::batch {
namespace {

constexpr uint32_t kNoKey = UINT32_MAX;

// Writes the rows of one section; `out_key` maps the batch's key indices to the encoded table's
// (kNoKey: left out).
class RowWriter {
 public:
  RowWriter(const Batch& b, const std::vector<uint32_t>& out_key, size_t table_size,
            std::string* out, EncodeStats* stats)
      : b_(b), out_key_(out_key), last_row_(table_size, 0), pos_(table_size, 0), out_(out),
        stats_(stats) {}

  void Section(const std::vector<Batch::Row>& rows, bool history) {
    coding::PutVarint64(out_, rows.size());
    prev_keys_.clear();
    have_prev_ = false;
    int64_t prev_time = 0;
    for (const Batch::Row& row : rows) {
      Collect(row);
      uint8_t flags = 0;
      if (history && row.step >= 0) flags |= kRowHasStep;
      const bool same = have_prev_ && keys_ == prev_keys_;
      if (same) flags |= kRowSameKeys;
      out_->push_back(char(flags));
      if (flags & kRowHasStep) coding::PutVarint64(out_, uint64_t(row.step));
      coding::PutVarint64(out_, coding::ZigZag(int64_t(uint64_t(row.time_ms) - uint64_t(prev_time))));
      prev_time = row.time_ms;
      if (!same) {
        coding::PutVarint64(out_, keys_.size());
        for (uint32_t k : keys_) coding::PutVarint64(out_, k);
        prev_keys_.swap(keys_);
        have_prev_ = true;
      }
      for (uint64_t bits : values_) coding::PutFixed64(out_, bits);
      stats_->points += int64_t(values_.size());
    }
  }

 private:
  // The row's distinct keys in first-seen order, each with its last value.
  void Collect(const Batch::Row& row) {
    keys_.clear();
    values_.clear();
    ++row_id_;
    const uint32_t end = row.begin + row.count;
    for (uint32_t i = row.begin; i < end && i < b_.cells.size(); ++i) {
      const Batch::Cell& c = b_.cells[i];
      const uint32_t k = c.key < out_key_.size() ? out_key_[c.key] : kNoKey;
      if (k == kNoKey) {
        ++stats_->dropped_keys;
        continue;
      }
      const uint64_t bits = coding::DoubleBits(c.value);
      if (last_row_[k] == row_id_) {
        values_[pos_[k]] = bits;  // the same key again in this row: the last value wins
        continue;
      }
      last_row_[k] = row_id_;
      pos_[k] = uint32_t(keys_.size());
      keys_.push_back(k);
      values_.push_back(bits);
    }
  }

  const Batch& b_;
  const std::vector<uint32_t>& out_key_;
  std::vector<uint64_t> last_row_;  // per encoded key: the row that named it last
  std::vector<uint32_t> pos_;       // per encoded key: its position in the current row
  std::vector<uint32_t> keys_, prev_keys_;
  std::vector<uint64_t> values_;
  uint64_t row_id_ = 0;
  bool have_prev_ = false;
  std::string* out_;
  EncodeStats* stats_;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (HexDigit(c) < 0) return false;
  }
  return true;
}

}  // namespace

std::string_view MediaTypeName(MediaType type) {
  switch (type) {
    case MediaType::kImage: return "image";
    case MediaType::kAudio: return "audio";
    case MediaType::kVideo: return "video";
    case MediaType::kHtml: return "html";
    case MediaType::kTable: return "table";
  }
  return {};
}

std::optional<MediaType> ParseMediaType(std::string_view name) {
  for (uint8_t t = 1; t <= 5; ++t) {
    if (MediaTypeName(MediaType(t)) == name) return MediaType(t);
  }
  return std::nullopt;
}

std::string InvalidMediaReason(const MediaRow& row) {
  if (!IsSha256Hex(row.sha256)) return "sha256: expected 64 lowercase hex digits";
  return InvalidMediaFieldsReason(row);
}

std::string InvalidMediaFieldsReason(const MediaRow& row) {
  if (MediaTypeName(row.type).empty()) return "unknown media type " + std::to_string(int(row.type));
  if (row.step < 0) return "step " + std::to_string(row.step) + " is negative";
  if (row.size < 0) return "size: must be >= 0";
  if (row.width < 0 || row.height < 0 || row.duration_ms < 0) {
    return "width, height and duration_ms must be >= 0";
  }
  if (row.cell_bytes < 0 || row.cell_bytes > limits::kMaxMediaCellBytes) {
    return "cell_bytes: 0 to " + std::to_string(limits::kMaxMediaCellBytes);
  }
  if (row.cell_bytes > 0 && row.type != MediaType::kTable) {
    return "cell_bytes: only a table has media cells";
  }
  if (row.mime.empty() || row.mime.size() > limits::kMaxMediaMimeBytes) {
    return "mime: 1 to " + std::to_string(limits::kMaxMediaMimeBytes) + " bytes";
  }
  for (char c : row.mime) {
    if (uint8_t(c) <= 0x20 || uint8_t(c) >= 0x7f || c == ';' || c == ',' || c == '"') {
      return "mime: '" + row.mime + "' is not a plain type/subtype";
    }
  }
  if (row.mime.find('/') == std::string::npos) {
    return "mime: '" + row.mime + "' is not a plain type/subtype";
  }
  if (row.caption.size() > limits::kMaxMediaCaptionBytes) {
    return "caption: longer than " + std::to_string(limits::kMaxMediaCaptionBytes) + " bytes";
  }
  if (!utf8::IsValid(row.caption)) return "caption: not valid UTF-8";
  return {};
}

namespace {
void AppendMediaRow(const MediaRow& m, uint32_t key, int64_t prev_time_ms, std::string* out) {
  out->push_back(char(m.cell_bytes > 0 ? kMediaCellBytes : 0));  // flags
  coding::PutVarint64(out, uint64_t(m.step));
  coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(m.time_ms) - uint64_t(prev_time_ms))));
  coding::PutVarint64(out, key);
  out->push_back(char(m.type));
  coding::PutVarint64(out, m.index);
  for (size_t i = 0; i + 1 < m.sha256.size(); i += 2) {
    out->push_back(char(HexDigit(m.sha256[i]) << 4 | HexDigit(m.sha256[i + 1])));
  }
  coding::PutVarint64(out, uint64_t(m.size));
  coding::PutVarint64(out, m.mime.size());
  out->append(m.mime);
  coding::PutVarint64(out, uint64_t(m.width));
  coding::PutVarint64(out, uint64_t(m.height));
  coding::PutVarint64(out, uint64_t(m.duration_ms));
  coding::PutVarint64(out, m.caption.size());
  out->append(m.caption);
  if (m.cell_bytes > 0) coding::PutVarint64(out, uint64_t(m.cell_bytes));
}
}  // namespace

void Batch::clear() {
  keys.clear();
  cells.clear();
  history.clear();
  system.clear();
  console.clear();
  histograms.clear();
  media.clear();
}

EncodeStats Encode(const Batch& b, std::string* out) {
  EncodeStats stats;
  const size_t start = out->size();
  size_t text_bytes = 0;
  for (const auto& k : b.keys) text_bytes += k.size() + 2;
  for (const auto& l : b.console) text_bytes += l.text.size() + 8;
  for (const auto& h : b.histograms) text_bytes += limits::HistogramWords(h.value.bins()) * 8;
  for (const auto& m : b.media) text_bytes += 96 + m.mime.size() + m.caption.size();
  out->reserve(start + kHeaderBytes + b.cells.size() * 9 +
               (b.history.size() + b.system.size()) * 6 + text_bytes + 16);
  out->append(kMagic);
  out->push_back(char(limits::kBatchVersion));
  out->append(3, '\0');     // flags, reserved
  out->append(4, '\0');     // crc32c, below
  const size_t payload = out->size();

  // Key table: valid keys, each once.
  std::vector<uint32_t> out_key(b.keys.size(), kNoKey);
  std::vector<std::string_view> table;
  table.reserve(b.keys.size());
  std::unordered_map<std::string_view, uint32_t> seen;
  if (b.keys.size() > 1) seen.reserve(b.keys.size());
  for (size_t i = 0; i < b.keys.size(); ++i) {
    const std::string_view key = b.keys[i];
    if (!InvalidKeyReason(key).empty()) continue;
    if (b.keys.size() > 1) {
      auto [it, added] = seen.emplace(key, uint32_t(table.size()));
      if (!added) {
        out_key[i] = it->second;
        continue;
      }
    }
    out_key[i] = uint32_t(table.size());
    table.push_back(key);
  }
  coding::PutVarint64(out, table.size());
  for (std::string_view key : table) {
    coding::PutVarint64(out, key.size());
    out->append(key);
  }

  RowWriter rows(b, out_key, table.size(), out, &stats);
  rows.Section(b.history, /*history=*/true);
  rows.Section(b.system, /*history=*/false);

  coding::PutVarint64(out, b.console.size());
  int64_t prev_time = 0;
  std::string fixed;
  for (const Batch::Line& line : b.console) {
    coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(line.time_ms) - uint64_t(prev_time))));
    prev_time = line.time_ms;
    out->push_back(line.is_stderr ? 1 : 0);
    std::string_view text = line.text;
    if (text.size() > limits::kMaxConsoleLineBytes || !utf8::IsValid(text)) {
      fixed.clear();
      utf8::AppendSanitized(text, limits::kMaxConsoleLineBytes, &fixed);
      text = fixed;
    }
    coding::PutVarint64(out, text.size());
    out->append(text);
  }

  // Histograms: valid ones only (the client checks them at the log call already).
  size_t valid = 0;
  for (const Batch::HistogramRow& h : b.histograms) {
    const bool ok = h.step >= 0 && h.key < out_key.size() && out_key[h.key] != kNoKey &&
                    histogram::InvalidReason(h.value).empty();
    valid += ok;
  }
  coding::PutVarint64(out, valid);
  prev_time = 0;
  for (const Batch::HistogramRow& h : b.histograms) {
    if (!(h.step >= 0 && h.key < out_key.size() && out_key[h.key] != kNoKey &&
          histogram::InvalidReason(h.value).empty())) {
      ++stats.dropped_histograms;
      continue;
    }
    const Histogram& v = h.value;
    out->push_back(char(kHistogramHasStep | (v.uniform() ? 0 : kHistogramEdges)));
    coding::PutVarint64(out, uint64_t(h.step));
    coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(h.time_ms) - uint64_t(prev_time))));
    prev_time = h.time_ms;
    coding::PutVarint64(out, out_key[h.key]);
    coding::PutVarint64(out, v.counts.size());
    if (v.uniform()) {
      coding::PutFixed64(out, coding::DoubleBits(v.lo));
      coding::PutFixed64(out, coding::DoubleBits(v.hi));
    } else {
      for (double e : v.edges) coding::PutFixed64(out, coding::DoubleBits(e));
    }
    for (double c : v.counts) coding::PutFixed64(out, coding::DoubleBits(c));
    ++stats.histograms;
  }

  // Media rows: valid ones only (the client checks them at the log call already).
  auto media_ok = [&](const MediaRow& m) {
    return m.key < out_key.size() && out_key[m.key] != kNoKey && InvalidMediaReason(m).empty();
  };
  valid = 0;
  for (const MediaRow& m : b.media) valid += media_ok(m);
  coding::PutVarint64(out, valid);
  prev_time = 0;
  for (const MediaRow& m : b.media) {
    if (!media_ok(m)) {
      ++stats.dropped_media;
      continue;
    }
    AppendMediaRow(m, out_key[m.key], prev_time, out);
    prev_time = m.time_ms;
    ++stats.media;
  }

  const uint32_t crc = crc32c::Value(out->data() + payload, out->size() - payload);
  for (int i = 0; i < 4; ++i) (*out)[payload - 4 + i] = char(crc >> (8 * i));
  return stats;
}

std::optional<uint8_t> Version(std::string_view bytes) {
  if (bytes.size() <= kMagic.size() || !bytes.starts_with(kMagic)) return std::nullopt;
  return uint8_t(bytes[kMagic.size()]);
}

Status CheckHeader(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    if (!bytes.starts_with(kMagic.substr(0, std::min(bytes.size(), kMagic.size())))) {
      return Status::InvalidArgument("binary batch: does not start with \"CBAT\"");
    }
    return Status::InvalidArgument("binary batch: truncated header (" +
                                   std::to_string(bytes.size()) + " of " +
                                   std::to_string(kHeaderBytes) + " bytes)");
  }
  if (!bytes.starts_with(kMagic)) {
    return Status::InvalidArgument("binary batch: does not start with \"CBAT\"");
  }
  const uint8_t version = uint8_t(bytes[kMagic.size()]);
  if (version != limits::kBatchVersion) {
    return Status::FailedPrecondition("binary batch version " + std::to_string(version) +
                                      " is not supported (this build reads version " +
                                      std::to_string(limits::kBatchVersion) + ")");
  }
  if (bytes[5] != 0 || bytes[6] != 0 || bytes[7] != 0) {
    return Status::InvalidArgument("binary batch: unknown header flags (bytes 5-7 must be 0)");
  }
  if (bytes.size() > limits::kMaxBatchBytes) {
    return Status::PayloadTooLarge("binary batch: " + std::to_string(bytes.size()) +
                                   " bytes, more than the limit of " +
                                   std::to_string(limits::kMaxBatchBytes));
  }
  const std::string_view payload = bytes.substr(kHeaderBytes);
  const uint32_t want = coding::DecodeFixed32(bytes.data() + 8);
  if (crc32c::Value(payload) != want) {
    return Status::InvalidArgument("binary batch: bad checksum (CRC-32C of the " +
                                   std::to_string(payload.size()) +
                                   " payload bytes does not match the header)");
  }
  return Status::Ok();
}

}  // namespace cohort::batch
