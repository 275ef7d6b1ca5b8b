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
  while (true) {
    size_t dot = rest.find('.');
    std::string_view seg = rest.substr(0, dot);
    if (seg.empty() || seg.find('"') != std::string_view::npos ||
        seg.find('\\') != std::string_view::npos) {
      return Status::InvalidArgument("filter: bad key path in field '" + field + "'");
    }
    p->path.emplace_back(seg);
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
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

Result<RunSortField> ParseRunSort(const std::string& sort) {
  if (sort.empty() || sort == "created") return RunSortField::kCreated;
  if (sort == "updated") return RunSortField::kUpdated;
  if (sort == "name") return RunSortField::kName;
  if (sort == "state") return RunSortField::kState;
  if (sort == "group") return RunSortField::kGroup;
  if (sort == "job_type") return RunSortField::kJobType;
  if (sort == "runtime") return RunSortField::kRuntime;
  return Status::InvalidArgument("sort: unknown field '" + sort +
                                 "' (use created, updated, name, state, group, job_type, runtime)");
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
  } else {
    raw += 's';
    raw += std::to_string(c.pk) + ":" + std::get<std::string>(c.key);
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
  if (sort < 0 || sort > static_cast<int>(RunSortField::kRuntime)) return bad;
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
  } else {
    return bad;
  }
  if (SortKeyIsInteger(c.sort) != (kind == 'i')) return bad;
  return c;
}

Result<RunCursor> DecodeRunCursorFor(const std::string& text, RunSortField sort, bool descending) {
  COHORT_ASSIGN_OR_RETURN(RunCursor c, DecodeRunCursor(text));
  if (c.sort != sort || c.descending != descending) {
    return Status::InvalidArgument("cursor: made for another sort order");
  }
  return c;
}

}  // namespace cohort::store
