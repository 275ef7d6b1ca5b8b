#include "core/artifact_names.h"

#include <algorithm>
#include <charconv>

#include "core/limits.h"
#include "core/utf8.h"

namespace cohort {
namespace {

Status Invalid(std::string_view what, std::string_view problem) {
  return Status::InvalidArgument(std::string(what) + ": " + std::string(problem));
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

Status ValidateArtifactName(std::string_view what, std::string_view name) {
  if (name.empty() || name.size() > limits::kMaxArtifactNameBytes) {
    return Invalid(what, "must be 1-" + std::to_string(limits::kMaxArtifactNameBytes) +
                             " bytes, got " + std::to_string(name.size()));
  }
  if (!std::all_of(name.begin(), name.end(), NameChar)) {
    return Invalid(what, "\"" + std::string(name) +
                             "\" has a character other than A-Z a-z 0-9 . _ - (no '/', spaces "
                             "or control characters)");
  }
  if (name.front() == '.') return Invalid(what, "\"" + std::string(name) + "\" starts with '.'");
  return Status::Ok();
}

bool IsReservedAlias(std::string_view a) {
  if (a == "latest" || a == "versions" || a == "aliases") return true;
  return a.size() > 1 && a[0] == 'v' &&
         std::all_of(a.begin() + 1, a.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status ValidateAliasName(std::string_view alias) {
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("alias", alias));
  if (IsReservedAlias(alias)) {
    return Invalid("alias", "\"" + std::string(alias) +
                                "\" is reserved (latest moves by itself; versions, aliases and "
                                "v<N> name other things)");
  }
  return Status::Ok();
}

Status ValidateRelativePath(std::string_view what, std::string_view path) {
  const std::string shown(path.substr(0, 200));
  if (path.empty() || path.size() > kMaxRelativePathBytes) {
    return Invalid(what, "must be 1-" + std::to_string(kMaxRelativePathBytes) + " bytes, got " +
                             std::to_string(path.size()));
  }
  if (!utf8::IsValid(path)) return Invalid(what, "not valid UTF-8");
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return Invalid(what, "'" + shown + "': control characters are not allowed");
    }
    if (c == '\\') return Invalid(what, "'" + shown + "': backslashes are not allowed (use '/')");
  }
  if (path.front() == '/') return Invalid(what, "'" + shown + "': must be a relative path");
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    std::string_view seg =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return Invalid(what, "'" + shown + "': empty, '.' and '..' segments are not allowed");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

std::optional<int64_t> ParseVersionName(std::string_view s) {
  if (s.size() < 2 || s.size() > 19 || s[0] != 'v') return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data() + 1, s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  if (s.size() > 2 && s[1] == '0') return std::nullopt;  // "v01" is not v1
  return v;
}

std::string VersionName(int64_t index) { return "v" + std::to_string(index); }

}  // namespace cohort
