#include "agent/batch_binary.h"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "agent/byte_reader.h"
#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::agent {
namespace {

constexpr std::string_view kMagic = "CBAT";
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 12;
constexpr uint8_t kHasStep = 1;
constexpr uint8_t kSameKeys = 2;
constexpr uint32_t kDropped = UINT32_MAX;
constexpr uint8_t kLogBatchFormatVersion = 1;  // of the LogBatch encoding (protocol.cc)

// Writes a row's header: flags, step (history rows that have one), time as a delta from the
// previous row's, and the row's key indices unless they repeat the previous row's (then
// kSameKeys). `keys` moves into `prev`.
void PutRowHeader(bool history, int64_t step, int64_t time_ms, std::vector<uint32_t>* keys,
                  std::vector<uint32_t>* prev, bool* have_prev, int64_t* prev_time,
                  std::string* out) {
  const bool same = *have_prev && *keys == *prev;
  uint8_t flags = same ? kSameKeys : 0;
  if (history && step >= 0) flags |= kHasStep;
  out->push_back(char(flags));
  if (flags & kHasStep) coding::PutVarint64(out, uint64_t(step));
  coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(time_ms) - uint64_t(*prev_time))));
  *prev_time = time_ms;
  if (!same) {
    coding::PutVarint64(out, keys->size());
    for (uint32_t k : *keys) coding::PutVarint64(out, k);
    prev->swap(*keys);
    *have_prev = true;
  }
}

// Maps the batch's key indices to indices of the key table written to `out`: keys made valid
// UTF-8, empty or over-long ones dropped, keys that became equal merged.
// `*merged` tells whether two keys became one.
std::vector<uint32_t> WriteKeyTable(const LogBatch& b, bool* merged, std::string* out) {
  std::vector<uint32_t> map(b.keys.size(), kDropped);
  std::vector<std::string> table;
  table.reserve(b.keys.size());
  std::unordered_map<std::string, uint32_t> index;
  for (size_t i = 0; i < b.keys.size(); ++i) {
    std::string key = SanitizeUtf8(b.keys[i]);
    if (key.empty() || key.size() > kMaxKeyBytes) continue;
    auto [it, added] = index.emplace(std::move(key), uint32_t(table.size()));
    if (added) table.push_back(it->first);
    map[i] = it->second;
    if (!added) *merged = true;
  }
  coding::PutVarint64(out, table.size());
  for (const std::string& key : table) {
    coding::PutVarint64(out, key.size());
    out->append(key);
  }
  return map;
}

// Writes the rows of one section; a row with the previous row's keys says so instead of
// listing them.
void WriteRows(const LogBatch& b, const std::vector<LogBatch::Row>& rows, bool history,
               const std::vector<uint32_t>& map, bool merged, BatchJsonStats* stats,
               std::string* out) {
  coding::PutVarint64(out, rows.size());
  std::vector<uint32_t> last_pos(b.keys.size(), UINT32_MAX);
  std::vector<uint32_t> prev, keys;
  std::vector<double> values;
  bool have_prev = false;
  int64_t prev_time = 0;
  for (const LogBatch::Row& row : rows) {
    // A key repeated within the row keeps its last value.
    keys.clear();
    values.clear();
    for (uint32_t i = row.begin; i < row.begin + row.count; ++i) last_pos[b.cells[i].key] = i;
    for (uint32_t i = row.begin; i < row.begin + row.count; ++i) {
      const LogBatch::Cell& cell = b.cells[i];
      if (last_pos[cell.key] != i) continue;
      if (map[cell.key] == kDropped) {
        ++stats->dropped_keys;
        continue;
      }
      keys.push_back(map[cell.key]);
      values.push_back(cell.value);
    }
    // Two source keys merged into one table key (after UTF-8 repair) keep the last value too.
    if (merged && keys.size() > 1) {
      for (size_t i = 0; i < keys.size(); ++i) {
        for (size_t j = i + 1; j < keys.size(); ++j) {
          if (keys[i] == keys[j]) {
            keys.erase(keys.begin() + long(i));
            values.erase(values.begin() + long(i));
            --i;
            break;
          }
        }
      }
    }
    PutRowHeader(history, row.step, row.time_ms, &keys, &prev, &have_prev, &prev_time, out);
    const size_t at = out->size();
    out->resize(at + values.size() * 8);
    char* p = out->data() + at;
    for (double v : values) {
      uint64_t bits = coding::DoubleBits(v);
      for (int k = 0; k < 8; ++k) p[k] = char(bits >> (8 * k));
      p += 8;
    }
    stats->points += int64_t(values.size());
  }
}

// One section of rows of the fast path; false when the general path must take the record.
bool TranscodeRows(ByteReader* r, bool history, size_t nkeys, std::vector<uint32_t>* stamp,
                   uint32_t* row_id, BatchJsonStats* stats, std::string* out) {
  const uint64_t n = r->Count(history ? 3 : 2);
  if (!r->ok()) return false;
  coding::PutVarint64(out, n);
  std::vector<uint32_t> prev, keys;
  bool have_prev = false;
  int64_t prev_time = 0;
  for (uint64_t i = 0; i < n; ++i) {
    int64_t step = history ? coding::UnZigZag(r->Varint()) : 0;
    const int64_t time_ms = int64_t(r->Varint());
    const uint64_t count = r->Count(9);
    if (!r->ok()) return false;
    keys.clear();
    ++*row_id;
    // Pass 1: key indices (checking them); pass 2 below copies the values.
    ByteReader cr(r->rest());
    for (uint64_t c = 0; c < count; ++c) {
      const uint64_t key = cr.Varint();
      (void)cr.Bytes(8);
      if (!cr.ok() || key >= nkeys) return false;
      if ((*stamp)[key] == *row_id) return false;  // a key twice in the row
      (*stamp)[key] = *row_id;
      keys.push_back(uint32_t(key));
    }
    PutRowHeader(history, step, time_ms, &keys, &prev, &have_prev, &prev_time, out);
    const size_t at = out->size();
    out->resize(at + count * 8);
    char* p = out->data() + at;
    for (uint64_t c = 0; c < count; ++c) {
      (void)r->Varint();
      std::string_view bits = r->Bytes(8);
      std::memcpy(p, bits.data(), 8);  // both little-endian IEEE-754 bits
      p += 8;
    }
    if (!r->ok()) return false;
    stats->points += int64_t(count);
  }
  return true;
}

}  // namespace

bool TranscodeLogBatchBinary(std::string_view record, int64_t seq, std::string* out,
                             BatchJsonStats* stats) {
  const size_t start = out->size();
  auto fail = [&] {
    out->resize(start);
    *stats = BatchJsonStats{};
    return false;
  };
  *stats = BatchJsonStats{};
  if (record.empty() || uint8_t(record[0]) != kLogBatchFormatVersion) return false;
  ByteReader r(record.substr(1));
  out->reserve(start + 64 + record.size());
  out->append(kMagic);
  out->push_back(char(kVersion));
  out->append(3, '\0');
  out->append(4, '\0');
  coding::PutVarint64(out, uint64_t(seq));
  const uint64_t nkeys = r.Count(1);
  if (!r.ok()) return fail();
  coding::PutVarint64(out, nkeys);
  std::vector<std::string_view> keys;
  keys.reserve(nkeys);
  for (uint64_t i = 0; i < nkeys; ++i) {
    std::string_view key = r.Bytes(r.Varint());
    if (!r.ok() || key.empty() || key.size() > kMaxKeyBytes || SanitizeUtf8(key) != key) {
      return fail();
    }
    for (std::string_view k : keys) {
      if (k == key) return fail();
    }
    keys.push_back(key);
    coding::PutVarint64(out, key.size());
    out->append(key);
  }
  std::vector<uint32_t> stamp(nkeys, 0);
  uint32_t row_id = 0;
  if (!TranscodeRows(&r, true, nkeys, &stamp, &row_id, stats, out) ||
      !TranscodeRows(&r, false, nkeys, &stamp, &row_id, stats, out)) {
    return fail();
  }
  const uint64_t nlines = r.Count(3);
  if (!r.ok()) return fail();
  coding::PutVarint64(out, nlines);
  int64_t prev_time = 0;
  for (uint64_t i = 0; i < nlines; ++i) {
    const int64_t time_ms = int64_t(r.Varint());
    const std::string_view stream = r.Bytes(1);
    const std::string_view text = r.Bytes(r.Varint());
    if (!r.ok() || text.size() > kMaxConsoleLineBytes || SanitizeUtf8(text) != text) {
      return fail();
    }
    coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(time_ms) - uint64_t(prev_time))));
    prev_time = time_ms;
    out->push_back(stream[0] != 0 ? 1 : 0);
    coding::PutVarint64(out, text.size());
    out->append(text);
  }
  if (!r.done()) return fail();
  const uint32_t crc =
      crc32c::Value(out->data() + start + kHeaderBytes, out->size() - start - kHeaderBytes);
  for (int k = 0; k < 4; ++k) (*out)[start + 8 + k] = char(crc >> (8 * k));
  return true;
}

BatchJsonStats AppendBatchBinary(const LogBatch& b, int64_t seq, std::string* out) {
  BatchJsonStats stats;
  const size_t start = out->size();
  out->reserve(start + 64 + b.cells.size() * 9 + (b.history.size() + b.system.size()) * 6);
  out->append(kMagic);
  out->push_back(char(kVersion));
  out->append(3, '\0');  // flags, reserved
  out->append(4, '\0');  // CRC-32C of the payload, filled below
  coding::PutVarint64(out, uint64_t(seq));
  bool merged = false;
  const std::vector<uint32_t> map = WriteKeyTable(b, &merged, out);
  WriteRows(b, b.history, true, map, merged, &stats, out);
  WriteRows(b, b.system, false, map, merged, &stats, out);
  coding::PutVarint64(out, b.console.size());
  int64_t prev_time = 0;
  for (const LogBatch::Line& line : b.console) {
    coding::PutVarint64(out, coding::ZigZag(int64_t(uint64_t(line.time_ms) - uint64_t(prev_time))));
    prev_time = line.time_ms;
    out->push_back(line.is_stderr ? 1 : 0);
    std::string text = SanitizeUtf8(line.text, kMaxConsoleLineBytes);
    coding::PutVarint64(out, text.size());
    out->append(text);
  }
  const uint32_t crc =
      crc32c::Value(out->data() + start + kHeaderBytes, out->size() - start - kHeaderBytes);
  for (int k = 0; k < 4; ++k) (*out)[start + 8 + k] = char(crc >> (8 * k));
  return stats;
}

}  // namespace cohort::agent
