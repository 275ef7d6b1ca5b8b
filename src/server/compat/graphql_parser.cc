#include "server/compat/graphql_parser.h"

#include <cstdint>

namespace cohort::compat::gql {

const Value* Selection::Arg(std::string_view n) const {
  for (const Argument& a : args) {
    if (a.name == n) return &a.value;
  }
  return nullptr;
}

const Fragment* Document::FindFragment(std::string_view name) const {
  for (const Fragment& f : fragments) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

enum class Tok { kEof, kPunct, kName, kInt, kFloat, kString };

struct Token {
  Tok kind = Tok::kEof;
  std::string_view raw;  // the source text of the token ("..." for spreads)
  std::string value;     // strings: decoded contents
  size_t pos = 0;
};

bool IsNameStart(char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

// The spec's BlockStringValue(): common indentation and blank first/last lines removed.
std::string BlockStringValue(std::string_view raw) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i <= raw.size(); ++i) {
    if (i == raw.size() || raw[i] == '\n' || raw[i] == '\r') {
      lines.push_back(raw.substr(start, i - start));
      if (i < raw.size() && raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  auto indent_of = [](std::string_view l) {
    size_t n = 0;
    while (n < l.size() && (l[n] == ' ' || l[n] == '\t')) ++n;
    return n;
  };
  size_t common = SIZE_MAX;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t n = indent_of(lines[i]);
    if (n < lines[i].size() && n < common) common = n;
  }
  if (common != SIZE_MAX) {
    for (size_t i = 1; i < lines.size(); ++i) {
      lines[i].remove_prefix(std::min(common, lines[i].size()));
    }
  }
  auto blank = [&](std::string_view l) { return indent_of(l) == l.size(); };
  size_t first = 0, last = lines.size();
  while (first < last && blank(lines[first])) ++first;
  while (last > first && blank(lines[last - 1])) --last;
  std::string out;
  for (size_t i = first; i < last; ++i) {
    if (i > first) out.push_back('\n');
    out.append(lines[i]);
  }
  return out;
}

class Parser {
 public:
  Parser(std::string_view src, const ParseLimits& limits) : src_(src), limits_(limits) {}

  Result<Document> ParseDocument() {
    Document doc;
    if (!Advance()) return status_;
    if (cur_.kind == Tok::kEof) return Fail("Unexpected <EOF>: the document has no operation");
    while (cur_.kind != Tok::kEof) {
      if (IsPunct("{")) {
        Operation op;
        if (!ParseSelectionSet(&op.selections)) return status_;
        doc.operations.push_back(std::move(op));
      } else if (cur_.kind == Tok::kName &&
                 (cur_.raw == "query" || cur_.raw == "mutation" || cur_.raw == "subscription")) {
        Operation op;
        if (!ParseOperation(&op)) return status_;
        doc.operations.push_back(std::move(op));
      } else if (cur_.kind == Tok::kName && cur_.raw == "fragment") {
        Fragment f;
        if (!ParseFragment(&f)) return status_;
        doc.fragments.push_back(std::move(f));
      } else if (cur_.kind == Tok::kName) {
        return Fail("Unexpected Name \"" + std::string(cur_.raw) +
                    "\": only executable definitions (operations and fragments) are supported");
      } else {
        return Fail("Unexpected " + Describe(cur_));
      }
    }
    return doc;
  }

 private:
  // ---- lexer ----

  std::pair<size_t, size_t> LineCol(size_t pos) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }

  bool FailAt(size_t pos, const std::string& what) {
    if (status_.ok()) {
      auto [line, col] = LineCol(pos);
      status_ = Status::InvalidArgument("Syntax Error: " + what + " (line " +
                                        std::to_string(line) + ", column " + std::to_string(col) +
                                        ")");
    }
    return false;
  }
  Status Fail(const std::string& what) {
    FailAt(cur_.pos, what);
    return status_;
  }
  bool FailHere(const std::string& what) { return FailAt(cur_.pos, what); }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEof: return "<EOF>";
      case Tok::kPunct: return "\"" + std::string(t.raw) + "\"";
      case Tok::kName: return "Name \"" + std::string(t.raw) + "\"";
      case Tok::kInt: return "Int \"" + std::string(t.raw) + "\"";
      case Tok::kFloat: return "Float \"" + std::string(t.raw) + "\"";
      case Tok::kString: return "String";
    }
    return "token";
  }

  void SkipIgnored() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (src_.substr(pos_, 3) == "\xEF\xBB\xBF") {  // byte order mark
        pos_ += 3;
      } else {
        break;
      }
    }
  }

  // Reads the next token into cur_.
  bool Advance() {
    SkipIgnored();
    cur_ = Token{};
    cur_.pos = pos_;
    if (pos_ >= src_.size()) {
      cur_.kind = Tok::kEof;
      return true;
    }
    if (++tokens_ > limits_.max_tokens) {
      return FailAt(pos_, "Document has more than " + std::to_string(limits_.max_tokens) +
                              " tokens");
    }
    char c = src_[pos_];
    if (src_.substr(pos_, 3) == "...") {
      cur_.kind = Tok::kPunct;
      cur_.raw = src_.substr(pos_, 3);
      pos_ += 3;
      return true;
    }
    static constexpr std::string_view kPunct = "!$&()=:@[]{}|";
    if (kPunct.find(c) != std::string_view::npos) {
      cur_.kind = Tok::kPunct;
      cur_.raw = src_.substr(pos_, 1);
      ++pos_;
      return true;
    }
    if (IsNameStart(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
      cur_.kind = Tok::kName;
      cur_.raw = src_.substr(start, pos_ - start);
      return true;
    }
    if (c == '-' || IsDigit(c)) return LexNumber();
    if (c == '"') return LexString();
    if (static_cast<unsigned char>(c) < 0x20) {
      return FailAt(pos_, "Invalid character U+00" + std::string(1, "0123456789ABCDEF"[(c >> 4) & 15]) +
                              std::string(1, "0123456789ABCDEF"[c & 15]));
    }
    return FailAt(pos_, "Unexpected character \"" + std::string(1, c) + "\"");
  }

  bool LexNumber() {
    size_t start = pos_;
    bool is_float = false;
    if (src_[pos_] == '-') ++pos_;
    if (pos_ >= src_.size() || !IsDigit(src_[pos_])) return FailAt(pos_, "Invalid number");
    if (src_[pos_] == '0') {
      ++pos_;
      if (pos_ < src_.size() && IsDigit(src_[pos_])) {
        return FailAt(pos_, "Invalid number, unexpected digit after 0");
      }
    } else {
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && src_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (pos_ >= src_.size() || !IsDigit(src_[pos_])) {
        return FailAt(pos_, "Invalid number, expected digit after \".\"");
      }
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (pos_ >= src_.size() || !IsDigit(src_[pos_])) {
        return FailAt(pos_, "Invalid number, expected digit in exponent");
      }
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (IsNameStart(src_[pos_]) || src_[pos_] == '.')) {
      return FailAt(pos_, "Invalid number, unexpected \"" + std::string(1, src_[pos_]) + "\"");
    }
    cur_.kind = is_float ? Tok::kFloat : Tok::kInt;
    cur_.raw = src_.substr(start, pos_ - start);
    return true;
  }

  bool ReadHex(size_t at, size_t n, uint32_t* out) {
    if (at + n > src_.size()) return false;
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      char h = src_[at + i];
      int d = IsDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                   : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + uint32_t(d);
    }
    *out = v;
    return true;
  }

  // Reads the code point of an escape "\u..." at pos_ (pointing after the "u").
  bool ReadUnicodeEscape(uint32_t* cp) {
    if (pos_ < src_.size() && src_[pos_] == '{') {  // \u{1F600}
      size_t end = src_.find('}', pos_);
      if (end == std::string_view::npos || end - pos_ - 1 == 0 || end - pos_ - 1 > 6 ||
          !ReadHex(pos_ + 1, end - pos_ - 1, cp) || *cp > 0x10FFFF ||
          (*cp >= 0xD800 && *cp <= 0xDFFF)) {
        return FailAt(pos_, "Invalid Unicode escape sequence");
      }
      pos_ = end + 1;
      return true;
    }
    if (!ReadHex(pos_, 4, cp)) return FailAt(pos_, "Invalid Unicode escape sequence");
    pos_ += 4;
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {  // a surrogate pair must follow
      uint32_t lo = 0;
      if (src_.substr(pos_, 2) != "\\u" || !ReadHex(pos_ + 2, 4, &lo) || lo < 0xDC00 ||
          lo > 0xDFFF) {
        return FailAt(pos_, "Invalid Unicode escape sequence: unpaired surrogate");
      }
      pos_ += 6;
      *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
      return FailAt(pos_, "Invalid Unicode escape sequence: unpaired surrogate");
    }
    return true;
  }

  bool LexString() {
    size_t start = pos_;
    cur_.kind = Tok::kString;
    if (src_.substr(pos_, 3) == "\"\"\"") {
      pos_ += 3;
      std::string raw;
      while (true) {
        if (pos_ >= src_.size()) return FailAt(start, "Unterminated string");
        if (src_.substr(pos_, 3) == "\"\"\"") {
          pos_ += 3;
          break;
        }
        if (src_.substr(pos_, 4) == "\\\"\"\"") {
          raw.append("\"\"\"");
          pos_ += 4;
        } else {
          raw.push_back(src_[pos_++]);
        }
        if (raw.size() > limits_.max_string_bytes) return FailAt(start, "String too long");
      }
      cur_.value = BlockStringValue(raw);
      cur_.raw = src_.substr(start, pos_ - start);
      return true;
    }
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) return FailAt(start, "Unterminated string");
      char c = src_[pos_];
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c == '\n' || c == '\r') return FailAt(pos_, "Unterminated string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= src_.size()) return FailAt(start, "Unterminated string");
        char e = src_[pos_++];
        switch (e) {
          case '"': out.push_back('"'); break;
          case '\\': out.push_back('\\'); break;
          case '/': out.push_back('/'); break;
          case 'b': out.push_back('\b'); break;
          case 'f': out.push_back('\f'); break;
          case 'n': out.push_back('\n'); break;
          case 'r': out.push_back('\r'); break;
          case 't': out.push_back('\t'); break;
          case 'u': {
            uint32_t cp = 0;
            if (!ReadUnicodeEscape(&cp)) return false;
            AppendUtf8(&out, cp);
            break;
          }
          default: return FailAt(pos_ - 2, "Invalid escape sequence \"\\" + std::string(1, e) + "\"");
        }
      } else {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          return FailAt(pos_, "Invalid character within string");
        }
        out.push_back(c);
        ++pos_;
      }
      if (out.size() > limits_.max_string_bytes) return FailAt(start, "String too long");
    }
    cur_.value = std::move(out);
    cur_.raw = src_.substr(start, pos_ - start);
    return true;
  }

  // ---- parser helpers ----

  bool IsPunct(std::string_view p) const { return cur_.kind == Tok::kPunct && cur_.raw == p; }

  bool Expect(std::string_view p) {
    if (!IsPunct(p)) return FailHere("Expected \"" + std::string(p) + "\", found " + Describe(cur_));
    return Advance();
  }

  bool ExpectName(std::string* out) {
    if (cur_.kind != Tok::kName) return FailHere("Expected Name, found " + Describe(cur_));
    *out = std::string(cur_.raw);
    return Advance();
  }

  bool Enter() {
    if (++depth_ > limits_.max_depth) {
      return FailHere("Document nested more than " + std::to_string(limits_.max_depth) +
                      " levels deep");
    }
    return true;
  }
  void Leave() { --depth_; }

  // ---- grammar ----

  bool ParseOperation(Operation* op) {
    op->type = std::string(cur_.raw);
    if (!Advance()) return false;
    if (cur_.kind == Tok::kName) {
      if (!ExpectName(&op->name)) return false;
    }
    if (IsPunct("(")) {
      if (!Advance()) return false;
      if (IsPunct(")")) return FailHere("Expected \"$\", found \")\"");
      while (!IsPunct(")")) {
        VariableDefinition v;
        if (!Expect("$") || !ExpectName(&v.name) || !Expect(":") || !ParseType(&v.type)) {
          return false;
        }
        if (IsPunct("=")) {
          if (!Advance()) return false;
          Value d;
          if (!ParseValue(&d, /*is_const=*/true)) return false;
          v.default_value = std::move(d);
        }
        if (!ParseDirectives(nullptr, /*is_const=*/true)) return false;
        op->variables.push_back(std::move(v));
      }
      if (!Advance()) return false;
    }
    if (!ParseDirectives(&op->directives, false)) return false;
    return ParseSelectionSet(&op->selections);
  }

  bool ParseFragment(Fragment* f) {
    if (!Advance()) return false;  // "fragment"
    if (cur_.kind == Tok::kName && cur_.raw == "on") return FailHere("Unexpected Name \"on\"");
    if (!ExpectName(&f->name)) return false;
    if (cur_.kind != Tok::kName || cur_.raw != "on") {
      return FailHere("Expected \"on\", found " + Describe(cur_));
    }
    if (!Advance() || !ExpectName(&f->type_condition)) return false;
    if (!ParseDirectives(&f->directives, false)) return false;
    return ParseSelectionSet(&f->selections);
  }

  bool ParseType(std::string* out) {
    if (IsPunct("[")) {
      if (!Enter() || !Advance()) return false;
      std::string inner;
      if (!ParseType(&inner) || !Expect("]")) return false;
      Leave();
      *out = "[" + inner + "]";
    } else {
      if (!ExpectName(out)) return false;
    }
    if (IsPunct("!")) {
      out->push_back('!');
      return Advance();
    }
    return true;
  }

  bool ParseDirectives(std::vector<Directive>* out, bool is_const) {
    while (IsPunct("@")) {
      Directive d;
      if (!Advance() || !ExpectName(&d.name)) return false;
      if (IsPunct("(") && !ParseArguments(&d.args, is_const)) return false;
      if (out) out->push_back(std::move(d));
    }
    return true;
  }

  bool ParseArguments(std::vector<Argument>* out, bool is_const) {
    if (!Advance()) return false;  // "("
    if (IsPunct(")")) return FailHere("Expected Name, found \")\"");
    while (!IsPunct(")")) {
      Argument a;
      if (!ExpectName(&a.name) || !Expect(":") || !ParseValue(&a.value, is_const)) return false;
      out->push_back(std::move(a));
    }
    return Advance();
  }

  bool ParseSelectionSet(std::vector<Selection>* out) {
    if (!Enter() || !Expect("{")) return false;
    if (IsPunct("}")) return FailHere("Expected Name, found \"}\"");
    while (!IsPunct("}")) {
      Selection s;
      if (!ParseSelection(&s)) return false;
      out->push_back(std::move(s));
    }
    Leave();
    return Advance();
  }

  bool ParseSelection(Selection* s) {
    if (IsPunct("...")) {
      if (!Advance()) return false;
      if (cur_.kind == Tok::kName && cur_.raw != "on") {
        s->kind = Selection::Kind::kFragmentSpread;
        if (!ExpectName(&s->name)) return false;
        return ParseDirectives(&s->directives, false);
      }
      s->kind = Selection::Kind::kInlineFragment;
      if (cur_.kind == Tok::kName) {  // "on"
        if (!Advance() || !ExpectName(&s->type_condition)) return false;
      }
      if (!ParseDirectives(&s->directives, false)) return false;
      s->has_selection_set = true;
      return ParseSelectionSet(&s->selections);
    }
    s->kind = Selection::Kind::kField;
    if (!ExpectName(&s->name)) return false;
    if (IsPunct(":")) {
      s->alias = std::move(s->name);
      if (!Advance() || !ExpectName(&s->name)) return false;
    }
    if (IsPunct("(") && !ParseArguments(&s->args, false)) return false;
    if (!ParseDirectives(&s->directives, false)) return false;
    if (IsPunct("{")) {
      s->has_selection_set = true;
      return ParseSelectionSet(&s->selections);
    }
    return true;
  }

  bool ParseValue(Value* v, bool is_const) {
    switch (cur_.kind) {
      case Tok::kEof:
        return FailHere("Expected a value, found <EOF>");
      case Tok::kInt:
        v->kind = Value::Kind::kInt;
        v->text = std::string(cur_.raw);
        return Advance();
      case Tok::kFloat:
        v->kind = Value::Kind::kFloat;
        v->text = std::string(cur_.raw);
        return Advance();
      case Tok::kString:
        v->kind = Value::Kind::kString;
        v->text = std::move(cur_.value);
        return Advance();
      case Tok::kName:
        if (cur_.raw == "true" || cur_.raw == "false") {
          v->kind = Value::Kind::kBool;
          v->boolean = cur_.raw == "true";
        } else if (cur_.raw == "null") {
          v->kind = Value::Kind::kNull;
        } else {
          v->kind = Value::Kind::kEnum;
          v->text = std::string(cur_.raw);
        }
        return Advance();
      case Tok::kPunct:
        break;
    }
    if (IsPunct("$")) {
      if (is_const) return FailHere("Unexpected variable in a constant value");
      v->kind = Value::Kind::kVariable;
      return Advance() && ExpectName(&v->text);
    }
    if (IsPunct("[")) {
      v->kind = Value::Kind::kList;
      if (!Enter() || !Advance()) return false;
      while (!IsPunct("]")) {
        Value item;
        if (!ParseValue(&item, is_const)) return false;
        v->list.push_back(std::move(item));
      }
      Leave();
      return Advance();
    }
    if (IsPunct("{")) {
      v->kind = Value::Kind::kObject;
      if (!Enter() || !Advance()) return false;
      while (!IsPunct("}")) {
        std::string name;
        Value field;
        if (!ExpectName(&name) || !Expect(":") || !ParseValue(&field, is_const)) return false;
        v->fields.push_back(ObjectField{std::move(name), std::move(field)});
      }
      Leave();
      return Advance();
    }
    return FailHere("Unexpected " + Describe(cur_));
  }

  std::string_view src_;
  const ParseLimits& limits_;
  size_t pos_ = 0;
  size_t tokens_ = 0;
  int depth_ = 0;
  Token cur_;
  Status status_;
};

}  // namespace

Result<Document> Parse(std::string_view text, const ParseLimits& limits) {
  Parser p(text, limits);
  return p.ParseDocument();
}

}  // namespace cohort::compat::gql
