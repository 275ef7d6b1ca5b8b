#include "store/sql/sql_dialect.h"

#include <cctype>
#include <map>

namespace cohort::store::sql {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool EqualsLower(std::string_view word, std::string_view lower) {
  if (word.size() != lower.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(word[i])) != lower[i]) return false;
  }
  return true;
}

// Reads the identifier at `i` (or an empty one), moving `i` past it.
std::string_view Word(std::string_view s, size_t* i) {
  const size_t start = *i;
  if (*i < s.size() && IsIdentStart(s[*i])) {
    while (*i < s.size() && IsIdent(s[*i])) ++*i;
  }
  return s.substr(start, *i - start);
}

void SkipSpace(std::string_view s, size_t* i) {
  while (*i < s.size() && IsSpace(s[*i])) ++*i;
}

// At `i` (after FOR): UPDATE, or NO KEY UPDATE. Moves `i` past it and returns true, or returns
// false.
bool LockClause(std::string_view s, size_t* i) {
  size_t k = *i;
  const std::string_view first = Word(s, &k);
  if (EqualsLower(first, "no")) {
    SkipSpace(s, &k);
    if (!EqualsLower(Word(s, &k), "key")) return false;
    SkipSpace(s, &k);
    if (!EqualsLower(Word(s, &k), "update")) return false;
  } else if (EqualsLower(first, "key")) {
    SkipSpace(s, &k);
    if (!EqualsLower(Word(s, &k), "share")) return false;
  } else if (!EqualsLower(first, "update") && !EqualsLower(first, "share")) {
    return false;
  }
  *i = k;
  return true;
}

// At `i` (after an `=` or `<>`): ANY|ALL ( $n ). Returns the parameter number and moves `i` past
// the closing parenthesis, or returns "" and leaves `i`.
std::string ArrayParam(std::string_view s, size_t* i, std::string_view quantifier) {
  size_t k = *i;
  SkipSpace(s, &k);
  if (!EqualsLower(Word(s, &k), quantifier)) return "";
  SkipSpace(s, &k);
  if (k >= s.size() || s[k] != '(') return "";
  ++k;
  SkipSpace(s, &k);
  if (k >= s.size() || s[k] != '$') return "";
  const size_t digits = ++k;
  while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
  if (k == digits) return "";
  std::string n(s.substr(digits, k - digits));
  SkipSpace(s, &k);
  if (k >= s.size() || s[k] != ')') return "";
  *i = k + 1;
  return n;
}

}  // namespace

std::string_view EngineName(Engine engine) {
  return engine == Engine::kSqlite ? "sqlite" : "postgres";
}

std::string RenderForSqlite(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 32);
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\'' || c == '"') {  // a literal or quoted name, quotes doubled inside
      size_t k = i + 1;
      while (k < s.size()) {
        if (s[k] == c && (k + 1 >= s.size() || s[k + 1] != c)) break;
        k += s[k] == c ? 2 : 1;
      }
      out.append(s.substr(i, k + 1 - i));
      i = k + 1;
      continue;
    }
    if (c == '$' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += '?';
      ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) out += s[i++];
      continue;
    }
    if (IsIdentStart(c)) {
      size_t k = i;
      const std::string_view word = Word(s, &k);
      size_t after = k;
      SkipSpace(s, &after);
      const bool call = after < s.size() && s[after] == '(';
      if (call && EqualsLower(word, "greatest")) {
        out += "max";
      } else if (call && EqualsLower(word, "least")) {
        out += "min";
      } else if (call && EqualsLower(word, "strpos")) {
        out += "instr";
      } else if (EqualsLower(word, "for") && LockClause(s, &after)) {
        while (!out.empty() && IsSpace(out.back())) out.pop_back();
        k = after;
        // FOR UPDATE OF a, b: the tables named go too.
        size_t of = k;
        SkipSpace(s, &of);
        if (EqualsLower(Word(s, &of), "of")) {
          do {
            SkipSpace(s, &of);
            if (Word(s, &of).empty()) break;
            k = of;
            SkipSpace(s, &of);
          } while (of < s.size() && s[of] == ',' && ++of);
        }
      } else {
        out.append(word);
      }
      i = k;
      continue;
    }
    const bool eq = c == '=';
    const bool ne = c == '<' && i + 1 < s.size() && s[i + 1] == '>';
    if (eq || ne) {
      size_t k = i + (eq ? 1 : 2);
      const std::string n = ArrayParam(s, &k, eq ? "any" : "all");
      if (!n.empty()) {
        out += eq ? "IN" : "NOT IN";
        out += " (SELECT value FROM json_each(?" + n + "))";
        i = k;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

std::string RenderSchema(std::string_view ddl, Engine engine,
                         const std::map<std::string, std::string, std::less<>>& values) {
  static const std::map<std::string, std::pair<const char*, const char*>, std::less<>> kTokens = {
      {"pk", {"INTEGER PRIMARY KEY", "bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"}},
      {"serial",
       {"INTEGER PRIMARY KEY AUTOINCREMENT", "bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"}},
      {"int", {"INTEGER", "bigint"}},
      {"real", {"REAL", "double precision"}},
      {"text", {"TEXT", "text"}},
      {"key", {"TEXT", "text COLLATE \"C\""}},
      {"blob", {"BLOB", "bytea"}},
      {"bool", {"INTEGER", "boolean"}},
      {"json", {"TEXT", "jsonb"}},
      {"hot", {"", " WITH (fillfactor = 70)"}},
      {"norowid", {" WITHOUT ROWID", ""}},
  };
  const bool pg = engine == Engine::kPostgres;
  std::string out;
  out.reserve(ddl.size());
  while (!ddl.empty()) {
    const size_t eol = ddl.find('\n');
    std::string_view line = ddl.substr(0, eol);
    ddl = eol == std::string_view::npos ? std::string_view() : ddl.substr(eol + 1);
    if (line.starts_with("pg: ") || line.starts_with("sqlite: ")) {
      const bool for_pg = line.starts_with("pg: ");
      if (for_pg != pg) continue;
      line.remove_prefix(for_pg ? 4 : 8);
    }
    size_t open;
    while ((open = line.find("{{")) != std::string_view::npos) {
      const size_t close = line.find("}}", open);
      if (close == std::string_view::npos) break;
      out.append(line.substr(0, open));
      const std::string_view token = line.substr(open + 2, close - open - 2);
      if (auto it = kTokens.find(token); it != kTokens.end()) {
        out += pg ? it->second.second : it->second.first;
      } else if (auto v = values.find(token); v != values.end()) {
        out += v->second;
      }
      line.remove_prefix(close + 2);
    }
    out.append(line);
    out += '\n';
  }
  return out;
}

}  // namespace cohort::store::sql
