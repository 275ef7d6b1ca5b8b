// JSON helpers over Boost.JSON: parsing with limits, non-finite doubles, and a field reader
// whose errors name the offending field ("config.lr: expected a number"). Thread-safe (no state).
//
// Non-finite doubles are not representable in JSON numbers; Cohort encodes them as the strings
// "NaN", "Infinity" and "-Infinity" and accepts the same on input (docs/api.md).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::json {

namespace bj = boost::json;

struct ParseLimits {
  size_t max_depth = 64;
};

// Parses `text` as one JSON value; invalid UTF-8, trailing garbage and nesting deeper than
// `limits.max_depth` are errors (kInvalidArgument, message says where).
Result<bj::value> Parse(std::string_view text, ParseLimits limits = {});

// A double as a JSON value: a number when finite, else "NaN" / "Infinity" / "-Infinity".
bj::value FromDouble(double d);
// Reads a metric value: a number, a bool (0/1) or one of the non-finite strings.
std::optional<double> ToDouble(const bj::value& v);

std::string Serialize(const bj::value& v);

// Reads fields of one JSON object and records the first error with the field's path.
//   FieldReader r(obj, "body");
//   auto name = r.OptString("name");
//   if (!r.ok()) return r.status();
class FieldReader {
 public:
  FieldReader(const bj::object& obj, std::string path);

  std::optional<std::string> OptString(std::string_view key, size_t max_len = 4096);
  std::string String(std::string_view key, size_t max_len = 4096);  // required
  std::optional<int64_t> OptInt(std::string_view key);
  int64_t Int(std::string_view key);  // required
  std::optional<double> OptDouble(std::string_view key);
  std::optional<bool> OptBool(std::string_view key);
  const bj::object* OptObject(std::string_view key);
  const bj::array* OptArray(std::string_view key);
  std::optional<std::vector<std::string>> OptStringArray(std::string_view key,
                                                         size_t max_len = 256);
  std::optional<std::vector<int64_t>> OptIntArray(std::string_view key);
  // Fails when the object has a key not in `allowed`.
  void RejectUnknown(std::initializer_list<std::string_view> allowed);

  void Fail(std::string_view key, std::string_view what);
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  std::string PathOf(std::string_view key) const;

 private:
  const bj::value* Find(std::string_view key) const;
  const bj::object& obj_;
  std::string path_;
  Status status_;
};

}  // namespace cohort::json
