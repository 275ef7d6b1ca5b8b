#include "core/list_param.h"

namespace cohort {

std::vector<std::string> SplitListParam(std::string_view s) {
  std::vector<std::string> out;
  std::string item;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == ',' || s[i + 1] == '\\')) {
      item += s[++i];
    } else if (c == ',') {
      if (!item.empty()) out.push_back(std::move(item));
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(std::move(item));
  return out;
}

std::string JoinListParam(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ',';
    for (char c : item) {
      if (c == ',' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace cohort
