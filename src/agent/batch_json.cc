#include "agent/batch_json.h"

#include <charconv>
#include <cmath>
#include <vector>

namespace cohort::agent {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return uint8_t(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

// Keys as they appear in the JSON, quoted and followed by ':', built once per batch; empty for
// keys the server would refuse.
std::vector<std::string> QuotedKeys(const LogBatch& b) {
  std::vector<std::string> out(b.keys.size());
  for (size_t i = 0; i < b.keys.size(); ++i) {
    const std::string& key = b.keys[i];
    if (key.empty() || key.size() > kMaxKeyBytes) continue;
    AppendJsonString(key, &out[i]);
    out[i].push_back(':');
  }
  return out;
}

void AppendValues(const LogBatch& b, const LogBatch::Row& row,
                  const std::vector<std::string>& quoted, std::vector<uint32_t>* last_pos,
                  BatchJsonStats* stats, std::string* out) {
  // A key repeated within the row keeps its last value: remember each key's last position.
  for (uint32_t i = row.begin; i < row.begin + row.count; ++i) (*last_pos)[b.cells[i].key] = i;
  out->push_back('{');
  bool first = true;
  for (uint32_t i = row.begin; i < row.begin + row.count; ++i) {
    const LogBatch::Cell& cell = b.cells[i];
    if ((*last_pos)[cell.key] != i) continue;
    const std::string& key = quoted[cell.key];
    if (key.empty()) {
      ++stats->dropped_keys;
      continue;
    }
    if (!first) out->push_back(',');
    first = false;
    out->append(key);
    AppendJsonDouble(cell.value, out);
    ++stats->points;
  }
  out->push_back('}');
}

}  // namespace

std::string SanitizeUtf8(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    std::string_view piece = n ? s.substr(i, n) : std::string_view(kReplacement, 3);
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += n ? n : 1;
  }
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = uint8_t(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      // Fast path: a run of plain ASCII.
      size_t j = i + 1;
      while (j < s.size()) {
        uint8_t d = uint8_t(s[j]);
        if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
        ++j;
      }
      out->append(s.data() + i, j - i);
      i = j;
      continue;
    }
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out->append(kReplacement, 3);
        ++i;
      } else {
        out->append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendJsonDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("\"NaN\"");
  } else if (std::isinf(d)) {
    out->append(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, d);
    out->append(buf, r.ptr);
  }
}

BatchJsonStats AppendBatchJson(const LogBatch& b, int64_t seq, std::string* out) {
  BatchJsonStats stats;
  std::vector<uint32_t> last_pos(b.keys.size(), UINT32_MAX);
  const std::vector<std::string> quoted = QuotedKeys(b);
  out->reserve(out->size() + 64 + b.cells.size() * 24);
  out->append("{\"seq\":");
  AppendInt(seq, out);
  if (!b.history.empty()) {
    out->append(",\"history\":[");
    for (size_t r = 0; r < b.history.size(); ++r) {
      const LogBatch::Row& row = b.history[r];
      if (r) out->push_back(',');
      out->append("{\"step\":");
      AppendInt(row.step, out);
      out->append(",\"time\":");
      AppendInt(row.time_ms, out);
      out->append(",\"values\":");
      AppendValues(b, row, quoted, &last_pos, &stats, out);
      out->push_back('}');
    }
    out->push_back(']');
  }
  if (!b.system.empty()) {
    out->append(",\"system\":[");
    for (size_t r = 0; r < b.system.size(); ++r) {
      const LogBatch::Row& row = b.system[r];
      if (r) out->push_back(',');
      out->append("{\"time\":");
      AppendInt(row.time_ms, out);
      out->append(",\"values\":");
      AppendValues(b, row, quoted, &last_pos, &stats, out);
      out->push_back('}');
    }
    out->push_back(']');
  }
  if (!b.console.empty()) {
    out->append(",\"console\":[");
    for (size_t i = 0; i < b.console.size(); ++i) {
      const LogBatch::Line& line = b.console[i];
      if (i) out->push_back(',');
      out->append("{\"time\":");
      AppendInt(line.time_ms, out);
      out->append(line.is_stderr ? ",\"stream\":\"stderr\",\"text\":" :
                                   ",\"stream\":\"stdout\",\"text\":");
      if (line.text.size() > kMaxConsoleLineBytes) {
        AppendJsonString(SanitizeUtf8(line.text, kMaxConsoleLineBytes), out);
      } else {
        AppendJsonString(line.text, out);
      }
      out->push_back('}');
    }
    out->push_back(']');
  }
  out->push_back('}');
  return stats;
}

}  // namespace cohort::agent
