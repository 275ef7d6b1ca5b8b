#include "core/json_non_finite.h"

namespace cohort::json {

std::string QuoteNonFinite(std::string_view json) {
  if (json.find("NaN") == std::string_view::npos &&
      json.find("Infinity") == std::string_view::npos) {
    return std::string(json);
  }
  std::string out;
  out.reserve(json.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size()) {
        out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (json.substr(i, 3) == "NaN") {
      out.append("\"NaN\"");
      i += 2;
    } else if (json.substr(i, 8) == "Infinity") {
      out.append("\"Infinity\"");
      i += 7;
    } else if (json.substr(i, 9) == "-Infinity") {
      out.append("\"-Infinity\"");
      i += 8;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace cohort::json
