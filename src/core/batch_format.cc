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

}  // namespace

void Batch::clear() {
  keys.clear();
  cells.clear();
  history.clear();
  system.clear();
  console.clear();
  histograms.clear();
}

EncodeStats Encode(const Batch& b, std::string* out) {
  EncodeStats stats;
  const size_t start = out->size();
  size_t text_bytes = 0;
  for (const auto& k : b.keys) text_bytes += k.size() + 2;
  for (const auto& l : b.console) text_bytes += l.text.size() + 8;
  for (const auto& h : b.histograms) text_bytes += limits::HistogramWords(h.value.bins()) * 8;
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
