#include "store/run_filter.h"

#include <charconv>
#include <cmath>

#include "core/text_encoding.h"

namespace cohort::store {
namespace {

constexpr char kCursorVersion = '1';

std::optional<double> ParseNumber(const std::string& s) {
  if (s == "true") return 1.0;
  if (s == "false") return 0.0;
  if (s.empty()) return std::nullopt;
  double d = 0;
  const char* begin = s.data();
  if (*begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), d);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

// "a.b" -> {"a", "b"}; false for an empty segment or one with '"' or '\\'.
bool SplitKeyPath(std::string_view rest, std::vector<std::string>* out) {
  while (true) {
    size_t dot = rest.find('.');
    std::string_view seg = rest.substr(0, dot);
    if (seg.empty() || seg.find('"') != std::string_view::npos ||
        seg.find('\\') != std::string_view::npos) {
      return false;
    }
    out->emplace_back(seg);
    if (dot == std::string_view::npos) return true;
    rest.remove_prefix(dot + 1);
  }
}

Result<FilterOp> ParseOp(const Filter& f) {
  const std::string& op = f.op;
  if (op == "==" || op == "=") return FilterOp::kEq;
  if (op == "!=") return FilterOp::kNe;
  if (op == "in") return FilterOp::kIn;
  if (op == "not in") return FilterOp::kNotIn;
  if (op == "~") return FilterOp::kContains;
  if (op == "<") return FilterOp::kLt;
  if (op == ">") return FilterOp::kGt;
  return Status::InvalidArgument("filter on '" + f.field + "': unknown op '" + op +
                                 "' (use ==, !=, in, not in, ~, <, >)");
}

Status ParseField(const Filter& f, RunPredicate* p) {
  const std::string& field = f.field;
  static const std::pair<const char*, FilterField> kPlain[] = {
      {"name", FilterField::kName},        {"group", FilterField::kGroup},
      {"job_type", FilterField::kJobType}, {"state", FilterField::kState},
      {"host", FilterField::kHost},        {"tag", FilterField::kTag},
      {"tags", FilterField::kTag},        {"created", FilterField::kCreated},
      {"updated", FilterField::kUpdated},
  };
  for (const auto& [name, value] : kPlain) {
    if (field == name) {
      p->field = value;
      return Status::Ok();
    }
  }
  std::string_view rest;
  if (field.starts_with("config.")) {
    p->field = FilterField::kConfig;
    rest = std::string_view(field).substr(7);
  } else if (field.starts_with("summary.")) {
    p->field = FilterField::kSummary;
    rest = std::string_view(field).substr(8);
  } else {
    return Status::InvalidArgument(
        "filter: unknown field '" + field +
        "' (use name, group, job_type, state, tag, host, created, updated, config.<key>, "
        "summary.<key>)");
  }
  if (!SplitKeyPath(rest, &p->path)) {
    return Status::InvalidArgument("filter: bad key path in field '" + field + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<RunPredicate> ParseFilter(const Filter& f) {
  RunPredicate p;
  COHORT_RETURN_IF_ERROR(ParseField(f, &p));
  COHORT_ASSIGN_OR_RETURN(p.op, ParseOp(f));
  const bool list_op = p.op == FilterOp::kIn || p.op == FilterOp::kNotIn;
  if (list_op ? f.values.empty() : f.values.size() != 1) {
    return Status::InvalidArgument("filter on '" + f.field + "': op '" + f.op + "' takes " +
                                   (list_op ? "one or more values" : "exactly one value"));
  }
  if (p.field == FilterField::kTag && (p.op == FilterOp::kLt || p.op == FilterOp::kGt)) {
    return Status::InvalidArgument("filter on 'tag': op '" + f.op + "' is not supported");
  }
  if (IsTimeField(p.field)) {
    if (p.op != FilterOp::kEq && p.op != FilterOp::kNe && p.op != FilterOp::kLt &&
        p.op != FilterOp::kGt) {
      return Status::InvalidArgument("filter on '" + f.field + "': op '" + f.op +
                                     "' is not supported (use ==, !=, <, >)");
    }
    int64_t ms = 0;
    const std::string& v = f.values[0];
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
      return Status::InvalidArgument("filter on '" + f.field +
                                     "': expected milliseconds since 1970 (an integer), got '" +
                                     v + "'");
    }
    p.values.push_back(FilterValue{v, double(ms)});
    return p;
  }
  const bool json = p.field == FilterField::kConfig || p.field == FilterField::kSummary;
  for (const std::string& v : f.values) {
    if (p.field == FilterField::kState && p.op != FilterOp::kContains && p.op != FilterOp::kLt &&
        p.op != FilterOp::kGt && !ParseRunState(v)) {
      return Status::InvalidArgument("filter on 'state': unknown state '" + v + "'");
    }
    FilterValue fv{v, std::nullopt};
    if (json) fv.number = ParseNumber(v);
    p.values.push_back(std::move(fv));
  }
  return p;
}

Result<std::vector<RunPredicate>> ParseFilters(const std::vector<Filter>& filters) {
  std::vector<RunPredicate> out;
  out.reserve(filters.size());
  for (const Filter& f : filters) {
    COHORT_ASSIGN_OR_RETURN(RunPredicate p, ParseFilter(f));
    out.push_back(std::move(p));
  }
  return out;
}

std::string JsonPath(const std::vector<std::string>& path) {
  std::string out = "$";
  for (const std::string& seg : path) {
    out += ".\"";
    out += seg;
    out += '"';
  }
  return out;
}

Result<RunSortField> ParseRunSort(const std::string& sort, std::vector<std::string>* path) {
  if (sort.empty() || sort == "created") return RunSortField::kCreated;
  if (sort == "updated") return RunSortField::kUpdated;
  if (sort == "name") return RunSortField::kName;
  if (sort == "state") return RunSortField::kState;
  if (sort == "group") return RunSortField::kGroup;
  if (sort == "job_type") return RunSortField::kJobType;
  if (sort == "runtime") return RunSortField::kRuntime;
  for (auto [prefix, field] : {std::pair{std::string_view("config."), RunSortField::kConfig},
                               std::pair{std::string_view("summary."), RunSortField::kSummary}}) {
    if (!sort.starts_with(prefix)) continue;
    std::vector<std::string> segments;
    if (!SplitKeyPath(std::string_view(sort).substr(prefix.size()), &segments)) {
      return Status::InvalidArgument("sort: bad key path in '" + sort + "'");
    }
    if (path) *path = std::move(segments);
    return field;
  }
  return Status::InvalidArgument("sort: unknown field '" + sort +
                                 "' (use created, updated, name, state, group, job_type, "
                                 "runtime, config.<key>, summary.<key>)");
}

bool SortKeyIsInteger(RunSortField f) {
  return f == RunSortField::kCreated || f == RunSortField::kUpdated || f == RunSortField::kRuntime;
}

// Layout before hex: version, sort (one digit), 'd'|'a', 'i'|'s', pk, ':', key.
std::string EncodeRunCursor(const RunCursor& c) {
  std::string raw;
  raw += kCursorVersion;
  raw += char('0' + static_cast<int>(c.sort));
  raw += c.descending ? 'd' : 'a';
  if (const int64_t* i = std::get_if<int64_t>(&c.key)) {
    raw += 'i';
    raw += std::to_string(c.pk) + ":" + std::to_string(*i);
  } else if (const std::string* t = std::get_if<std::string>(&c.key)) {
    raw += 's';
    raw += std::to_string(c.pk) + ":" + *t;
  } else {
    // 'j', pk, ':', length of the path, ':', path, class digit, then the number or the text.
    const RunJsonSortKey& j = std::get<RunJsonSortKey>(c.key);
    raw += 'j';
    raw += std::to_string(c.pk) + ":" + std::to_string(c.path.size()) + ":" + c.path;
    raw += char('0' + static_cast<int>(j.cls));
    if (j.cls == JsonSortClass::kNumber) {
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, j.number);  // shortest round trip
      raw.append(buf, ec == std::errc() ? end : buf);
    } else if (j.cls == JsonSortClass::kText) {
      raw += j.text;
    }
  }
  return HexLower(raw);
}

Result<RunCursor> DecodeRunCursor(const std::string& text) {
  const Status bad = Status::InvalidArgument("cursor: not a cursor from this server");
  if (text.size() % 2 != 0) return bad;
  std::string raw;
  raw.reserve(text.size() / 2);
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return bad;
    raw += char(hi * 16 + lo);
  }
  if (raw.size() < 6 || raw[0] != kCursorVersion) return bad;
  RunCursor c;
  int sort = raw[1] - '0';
  if (sort < 0 || sort > static_cast<int>(RunSortField::kSummary)) return bad;
  c.sort = static_cast<RunSortField>(sort);
  if (raw[2] != 'd' && raw[2] != 'a') return bad;
  c.descending = raw[2] == 'd';
  const char kind = raw[3];
  size_t colon = raw.find(':', 4);
  if (colon == std::string::npos) return bad;
  auto parse_int = [](std::string_view s, int64_t* v) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
  };
  if (!parse_int(std::string_view(raw).substr(4, colon - 4), &c.pk)) return bad;
  std::string key = raw.substr(colon + 1);
  if (kind == 'i') {
    int64_t v = 0;
    if (!parse_int(key, &v)) return bad;
    c.key = v;
  } else if (kind == 's') {
    c.key = std::move(key);
  } else if (kind == 'j') {
    const size_t colon2 = key.find(':');
    int64_t len = 0;
    if (colon2 == std::string::npos || !parse_int(std::string_view(key).substr(0, colon2), &len) ||
        len < 0 || key.size() - colon2 - 1 < size_t(len) + 1) {
      return bad;
    }
    c.path = key.substr(colon2 + 1, size_t(len));
    std::string_view rest = std::string_view(key).substr(colon2 + 1 + size_t(len));
    RunJsonSortKey j;
    const int cls = rest[0] - '0';
    if (cls < 0 || cls > static_cast<int>(JsonSortClass::kMissing)) return bad;
    j.cls = static_cast<JsonSortClass>(cls);
    rest.remove_prefix(1);
    if (j.cls == JsonSortClass::kNumber) {
      auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), j.number);
      if (rest.empty() || ec != std::errc() || ptr != rest.data() + rest.size() ||
          std::isnan(j.number)) {
        return bad;
      }
    } else if (j.cls == JsonSortClass::kText) {
      j.text = std::string(rest);
    } else if (!rest.empty()) {
      return bad;
    }
    c.key = std::move(j);
  } else {
    return bad;
  }
  if (SortKeyIsInteger(c.sort) != (kind == 'i') || IsJsonSort(c.sort) != (kind == 'j')) {
    return bad;
  }
  return c;
}

Result<RunCursor> DecodeRunCursorFor(const std::string& text, RunSortField sort, bool descending,
                                     const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(RunCursor c, DecodeRunCursor(text));
  if (c.sort != sort || c.descending != descending || c.path != path) {
    return Status::InvalidArgument("cursor: made for another sort order");
  }
  return c;
}

}  // namespace cohort::store
