#include "core/json.h"

#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <limits>

namespace cohort::json {

namespace {

// A basic_parser handler that builds a DOM like boost::json::parse, except that doubles are
// converted from their text with std::from_chars (correctly rounded): Boost.JSON 1.81's own
// conversion can be off by one unit in the last place, and metric values must round-trip.
class PreciseDomHandler {
 public:
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);

  bj::value result;

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code&) {
    stack_.emplace_back(bj::array{});
    return true;
  }
  bool on_array_end(std::size_t, boost::system::error_code&) { return Close(); }
  bool on_object_begin(boost::system::error_code&) {
    stack_.emplace_back(bj::object{});
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) { return Close(); }
  bool on_string_part(bj::string_view s, std::size_t, boost::system::error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_string(bj::string_view s, std::size_t, boost::system::error_code&) {
    text_.append(s.data(), s.size());
    bool ok = Put(bj::value(bj::string_view(text_)));
    text_.clear();
    return ok;
  }
  bool on_key_part(bj::string_view s, std::size_t, boost::system::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(bj::string_view s, std::size_t, boost::system::error_code&) {
    key_.append(s.data(), s.size());
    keys_.push_back(std::move(key_));
    key_.clear();
    return true;
  }
  bool on_number_part(bj::string_view s, boost::system::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, bj::string_view, boost::system::error_code&) {
    number_.clear();
    return Put(bj::value(i));
  }
  bool on_uint64(uint64_t u, bj::string_view, boost::system::error_code&) {
    number_.clear();
    return Put(bj::value(u));
  }
  bool on_double(double d, bj::string_view s, boost::system::error_code& error) {
    number_.append(s.data(), s.size());
    double precise = d;
    const char* first = number_.data();
    const char* last = first + number_.size();
    auto [p, ec] = std::from_chars(first, last, precise);
    if (ec != std::errc() || p != last) precise = d;  // out of range: keep Boost's value
    number_.clear();
    // A literal beyond the range of a double ("1e999") would become an infinity, which no JSON
    // text can hold: it could be stored but never served back as valid JSON.
    if (!std::isfinite(precise)) {
      error = bj::error::exponent_overflow;
      return false;
    }
    return Put(bj::value(precise));
  }
  bool on_bool(bool b, boost::system::error_code&) { return Put(bj::value(b)); }
  bool on_null(boost::system::error_code&) { return Put(bj::value(nullptr)); }
  bool on_comment_part(bj::string_view, boost::system::error_code&) { return true; }
  bool on_comment(bj::string_view, boost::system::error_code&) { return true; }

 private:
  bool Put(bj::value v) {
    if (stack_.empty()) {
      result = std::move(v);
      return true;
    }
    bj::value& top = stack_.back();
    if (top.is_array()) {
      top.get_array().emplace_back(std::move(v));
    } else {
      // Duplicate keys: the last one wins, as in boost::json::parse.
      top.get_object()[keys_.back()] = std::move(v);
      keys_.pop_back();
    }
    return true;
  }
  bool Close() {
    bj::value done = std::move(stack_.back());
    stack_.pop_back();
    return Put(std::move(done));
  }

  std::vector<bj::value> stack_;
  std::vector<std::string> keys_;
  std::string key_, text_, number_;
};

}  // namespace

Result<bj::value> Parse(std::string_view text, ParseLimits limits) {
  bj::parse_options opts;
  opts.max_depth = limits.max_depth;
  opts.allow_invalid_utf8 = false;
  bj::basic_parser<PreciseDomHandler> parser(opts);
  boost::system::error_code ec;
  std::size_t n = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && n < text.size()) ec = bj::error::extra_data;
  if (ec) {
    if (ec == bj::error::too_deep) {
      return Status::InvalidArgument("body: JSON nesting deeper than " +
                                     std::to_string(limits.max_depth));
    }
    if (ec == bj::error::exponent_overflow) {
      return Status::InvalidArgument("body: a number is out of the range of a double (at byte " +
                                     std::to_string(n) + ")");
    }
    return Status::InvalidArgument("body: malformed JSON (" + ec.message() + ")");
  }
  return std::move(parser.handler().result);
}

bj::value FromDouble(double d) {
  if (std::isfinite(d)) return bj::value(d);
  if (std::isnan(d)) return bj::value("NaN");
  return bj::value(d > 0 ? "Infinity" : "-Infinity");
}

std::optional<double> ToDouble(const bj::value& v) {
  switch (v.kind()) {
    case bj::kind::double_: return v.get_double();
    case bj::kind::int64: return double(v.get_int64());
    case bj::kind::uint64: return double(v.get_uint64());
    case bj::kind::bool_: return v.get_bool() ? 1.0 : 0.0;
    case bj::kind::string: {
      const auto& s = v.get_string();
      if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

std::string Serialize(const bj::value& v) { return bj::serialize(v); }

FieldReader::FieldReader(const bj::object& obj, std::string path)
    : obj_(obj), path_(std::move(path)) {}

std::string FieldReader::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

void FieldReader::Fail(std::string_view key, std::string_view what) {
  if (!status_.ok()) return;
  status_ = Status::InvalidArgument(PathOf(key) + ": " + std::string(what));
}

const bj::value* FieldReader::Find(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

std::optional<std::string> FieldReader::OptString(std::string_view key, size_t max_len) {
  const bj::value* v = Find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    Fail(key, "expected a string");
    return std::nullopt;
  }
  const auto& s = v->get_string();
  if (s.size() > max_len) {
    Fail(key, "longer than " + std::to_string(max_len) + " bytes");
    return std::nullopt;
  }
  return std::string(s);
}

std::string FieldReader::String(std::string_view key, size_t max_len) {
  if (!Find(key)) {
    Fail(key, "required");
    return {};
  }
  return OptString(key, max_len).value_or("");
}

std::optional<int64_t> FieldReader::OptInt(std::string_view key) {
  const bj::value* v = Find(key);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= uint64_t(std::numeric_limits<int64_t>::max())) {
    return int64_t(v->get_uint64());
  }
  if (v->is_double()) {
    double d = v->get_double();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return int64_t(d);
  }
  Fail(key, "expected an integer");
  return std::nullopt;
}

int64_t FieldReader::Int(std::string_view key) {
  if (!Find(key)) {
    Fail(key, "required");
    return 0;
  }
  return OptInt(key).value_or(0);
}

std::optional<double> FieldReader::OptDouble(std::string_view key) {
  const bj::value* v = Find(key);
  if (!v) return std::nullopt;
  auto d = ToDouble(*v);
  if (!d) Fail(key, "expected a number");
  return d;
}

std::optional<bool> FieldReader::OptBool(std::string_view key) {
  const bj::value* v = Find(key);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    Fail(key, "expected true or false");
    return std::nullopt;
  }
  return v->get_bool();
}

const bj::object* FieldReader::OptObject(std::string_view key) {
  const bj::value* v = Find(key);
  if (!v) return nullptr;
  if (!v->is_object()) {
    Fail(key, "expected an object");
    return nullptr;
  }
  return &v->get_object();
}

const bj::array* FieldReader::OptArray(std::string_view key) {
  const bj::value* v = Find(key);
  if (!v) return nullptr;
  if (!v->is_array()) {
    Fail(key, "expected an array");
    return nullptr;
  }
  return &v->get_array();
}

std::optional<std::vector<std::string>> FieldReader::OptStringArray(std::string_view key,
                                                                    size_t max_len) {
  const bj::array* a = OptArray(key);
  if (!a) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : *a) {
    if (!e.is_string()) {
      Fail(key, "expected an array of strings");
      return std::nullopt;
    }
    if (e.get_string().size() > max_len) {
      Fail(key, "an element is longer than " + std::to_string(max_len) + " bytes");
      return std::nullopt;
    }
    out.emplace_back(e.get_string());
  }
  return out;
}

std::optional<std::vector<int64_t>> FieldReader::OptIntArray(std::string_view key) {
  const bj::array* a = OptArray(key);
  if (!a) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& e : *a) {
    if (!e.is_int64() && !(e.is_uint64() && e.get_uint64() < (1ull << 62))) {
      Fail(key, "expected an array of integers");
      return std::nullopt;
    }
    out.push_back(e.is_int64() ? e.get_int64() : int64_t(e.get_uint64()));
  }
  return out;
}

void FieldReader::RejectUnknown(std::initializer_list<std::string_view> allowed) {
  for (const auto& kv : obj_) {
    bool known = false;
    for (auto a : allowed) known = known || kv.key() == a;
    if (!known) {
      Fail(kv.key(), "unknown field");
      return;
    }
  }
}

}  // namespace cohort::json
