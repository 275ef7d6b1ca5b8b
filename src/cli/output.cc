#include "cli/output.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>

namespace cohort::cli {
namespace {

size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  bool escape = false;
  for (unsigned char c : s) {
    if (escape) {
      if (c == 'm') escape = false;
      continue;
    }
    if (c == 0x1b) {
      escape = true;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++n;  // count code points, not continuation bytes
  }
  return n;
}

}  // namespace

bool UseColor(std::FILE* stream, std::string_view mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  return isatty(fileno(stream)) == 1;
}

std::string ColorState(std::string_view state, bool color) {
  std::string text(state);
  if (!color) return text;
  const char* code = nullptr;
  if (state == "running") code = "36";
  if (state == "finished") code = "32";
  if (state == "failed" || state == "crashed") code = "31";
  if (state == "killed" || state == "preempted") code = "33";
  if (!code) return text;
  return std::string("\x1b[") + code + "m" + text + "\x1b[0m";
}

void Table::AddRow(std::vector<std::string> cells, std::vector<std::string> display) {
  cells.resize(header_.size());
  if (!display.empty()) display.resize(header_.size());
  rows_.push_back(std::move(cells));
  display_.push_back(std::move(display));
}

void Table::Print(std::FILE* out, std::string_view indent) const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) width[c] = DisplayWidth(header_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], DisplayWidth(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells, const std::vector<std::string>& shown) {
    std::string text(indent);
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string& s = shown.empty() || shown[c].empty() ? cells[c] : shown[c];
      text += s;
      if (c + 1 < cells.size()) text.append(width[c] - DisplayWidth(cells[c]) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    text.push_back('\n');
    std::fputs(text.c_str(), out);
  };
  line(header_, {});
  for (size_t r = 0; r < rows_.size(); ++r) line(rows_[r], display_[r]);
}

bool NaturalLess(std::string_view a, std::string_view b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;  // leading zeros do not count
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
      if (int c = a.substr(i0, i1 - i0).compare(b.substr(j0, j1 - j0)); c != 0) return c < 0;
      i = i1;
      j = j1;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string CompactJson(const boost::json::value& v) {
  namespace bj = boost::json;
  switch (v.kind()) {
    case bj::kind::double_: {
      double d = v.get_double();
      return std::isfinite(d) ? FormatDouble(d) : "\"" + FormatDouble(d) + "\"";
    }
    case bj::kind::array: {
      std::string out = "[";
      for (const bj::value& e : v.get_array()) {
        if (out.size() > 1) out += ',';
        out += CompactJson(e);
      }
      return out + "]";
    }
    case bj::kind::object: {
      std::string out = "{";
      for (const auto& kv : v.get_object()) {
        if (out.size() > 1) out += ',';
        out += bj::serialize(bj::value(kv.key())) + ":" + CompactJson(kv.value());
      }
      return out + "}";
    }
    default:
      return bj::serialize(v);
  }
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, p);
}

std::string FormatTime(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = std::time_t(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  char buf[32];
  int64_t s = ms / 1000;
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  } else if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  }
  return buf;
}

Result<std::string> PathUnder(const std::string& root, const std::string& relative,
                              std::string_view what) {
  // Empty and "." segments name nothing ("a//b", "val/./x", "val/" are a/b, val/x, val).
  std::string out = root;
  bool bad = relative.starts_with('/'), any = false;
  for (size_t start = 0; !bad && start <= relative.size();) {
    const size_t slash = std::min(relative.find('/', start), relative.size());
    std::string_view seg = std::string_view(relative).substr(start, slash - start);
    start = slash + 1;
    if (seg.empty() || seg == ".") continue;
    bad = seg == "..";
    out += "/";
    out += seg;
    any = true;
  }
  if (bad || !any) {
    return Status::InvalidArgument(std::string(what) + " '" + relative + "' leaves " + root +
                                   ": not written");
  }
  return out;
}

}  // namespace cohort::cli
